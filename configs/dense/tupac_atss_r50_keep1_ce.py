# TUPAC16 (cases 01-23), one original label kept per patch, ATSS ResNet-50 FPN: the
# detector's own loss (focal loss), the baseline. The parent of every TUPAC16 (cases
# 01-23) x ATSS ResNet-50 FPN experiment.
_base_ = [
    '../_base_/models/atss_r50_fpn.py',
    '../_base_/datasets/tupac.py',
    '../_base_/deletion/tupac_original_keep1.py',
    '../_base_/schedules/adam_2580it.py',
    '../_base_/default_runtime.py',
]
model = dict(bbox_head=dict(num_classes=_base_.num_classes))
