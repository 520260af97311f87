# Synthetic multi-class cells (tumor / lymphocyte / stromal), at most two annotations
# per class and 256 px tile, slim ATSS on CPU: the detector's own loss (focal loss), the
# baseline. The parent of every multi-class synthetic ATSS experiment (prepare the data:
# see the dataset base).
_base_ = [
    '../_base_/models/atss_r18-slim_fpn.py',
    '../_base_/datasets/synthetic_multi.py',
    '../_base_/deletion/cap2_per_class.py',
    '../_base_/schedules/cpu_short.py',
    '../_base_/default_runtime.py',
]
# one cap per class: the base's detections per patch times the number of classes
model = dict(
    bbox_head=dict(num_classes=_base_.num_classes),
    test_cfg=dict(max_per_img=_base_.model.test_cfg.max_per_img * _base_.num_classes))
