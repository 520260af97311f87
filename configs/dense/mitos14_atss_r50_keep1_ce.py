# MITOS-ATYPIA-14, random keep-1 deletion, ATSS ResNet-50 FPN: the detector's own loss
# (focal loss), the baseline. The parent of every MITOS-ATYPIA-14 x ATSS ResNet-50 FPN
# experiment.
_base_ = [
    '../_base_/models/atss_r50_fpn.py',
    '../_base_/datasets/mitos14.py',
    '../_base_/deletion/keep1_random.py',
    '../_base_/schedules/adam_2580it.py',
    '../_base_/default_runtime.py',
]
model = dict(bbox_head=dict(num_classes=_base_.num_classes))
