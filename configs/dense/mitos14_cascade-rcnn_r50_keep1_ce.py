# MITOS-ATYPIA-14, random keep-1 deletion, Cascade R-CNN ResNet-50 FPN: the detector's
# own loss (cross entropy), the baseline. The parent of every MITOS-ATYPIA-14 x Cascade
# R-CNN ResNet-50 FPN experiment.
_base_ = [
    '../_base_/models/cascade-rcnn_r50_fpn.py',
    '../_base_/datasets/mitos14.py',
    '../_base_/deletion/keep1_random.py',
    '../_base_/schedules/adam_2580it.py',
    '../_base_/default_runtime.py',
]
model = dict(roi_head=dict(bbox_head=[
    dict(head, num_classes=_base_.num_classes)
    for head in _base_.model.roi_head.bbox_head]))
