# NuCLS (tumor / lymphocyte / stromal), at most ten annotations per class and image,
# Cascade R-CNN ResNet-50 FPN: the detector's own loss (cross entropy), the baseline.
# The parent of every NuCLS (tumor / lymphocyte / stromal) x Cascade R-CNN ResNet-50 FPN
# experiment.
_base_ = [
    '../_base_/models/cascade-rcnn_r50_fpn.py',
    '../_base_/datasets/nucls.py',
    '../_base_/deletion/cap10_per_class.py',
    '../_base_/schedules/adam_2580it.py',
    '../_base_/default_runtime.py',
]
model = dict(roi_head=dict(bbox_head=[
    dict(head, num_classes=_base_.num_classes)
    for head in _base_.model.roi_head.bbox_head]),
    # one cap per class: the base's detections per patch times the number of classes
    test_cfg=dict(rcnn=dict(
        max_per_img=_base_.model.test_cfg.rcnn.max_per_img * _base_.num_classes)))
