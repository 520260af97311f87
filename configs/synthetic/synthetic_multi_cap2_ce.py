# Synthetic multi-class cells (tumor / lymphocyte / stromal), at most two annotations per
# class and 256 px tile, slim model on CPU: cross-entropy baseline.
_base_ = [
    '../_base_/models/faster-rcnn_r18-slim_fpn.py',
    '../_base_/datasets/synthetic_multi.py',
    '../_base_/deletion/cap10_per_class.py',
    '../_base_/methods/ce.py',
    '../_base_/schedules/cpu_short.py',
    '../_base_/default_runtime.py',
]
# 5-10 tumor, 4-10 lymphocyte and 3-7 stromal nuclei per tile: a cap of ten would delete
# almost nothing, two leaves a sparse annotation like NuCLS's.
deletion = dict(_base_.deletion, k=2)
model = dict(
    rpn_head=_base_.rpn_head,
    roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes, **_base_.bbox_head)))
train_dataloader = dict(dataset=dict(deletion=deletion))
val_dataloader = dict(dataset=dict(deletion=deletion))
