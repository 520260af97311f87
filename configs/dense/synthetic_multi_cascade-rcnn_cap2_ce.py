# Synthetic multi-class cells (tumor / lymphocyte / stromal), at most two annotations
# per class and 256 px tile, slim Cascade R-CNN on CPU: the detector's own loss (cross
# entropy), the baseline. The parent of every multi-class synthetic Cascade R-CNN
# experiment (prepare the data: see the dataset base).
_base_ = [
    '../_base_/models/cascade-rcnn_r18-slim_fpn.py',
    '../_base_/datasets/synthetic_multi.py',
    '../_base_/deletion/cap2_per_class.py',
    '../_base_/schedules/cpu_short.py',
    '../_base_/default_runtime.py',
]
model = dict(roi_head=dict(bbox_head=[
    dict(head, num_classes=_base_.num_classes)
    for head in _base_.model.roi_head.bbox_head]),
    # one cap per class: the base's detections per patch times the number of classes
    test_cfg=dict(rcnn=dict(
        max_per_img=_base_.model.test_cfg.rcnn.max_per_img * _base_.num_classes)))
