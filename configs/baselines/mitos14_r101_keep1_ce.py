# MITOS-ATYPIA-14, random keep-1 deletion, ResNet-101 FPN: cross-entropy baseline
# (Section 3.2.3, Table 5).
# The parent of every MITOS-ATYPIA-14 x ResNet-101 FPN experiment.
_base_ = [
    '../_base_/models/faster-rcnn_r101_fpn.py',
    '../_base_/datasets/mitos14.py',
    '../_base_/deletion/keep1_random.py',
    '../_base_/schedules/adam_2580it.py',
    '../_base_/default_runtime.py',
]
model = dict(roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes)))
