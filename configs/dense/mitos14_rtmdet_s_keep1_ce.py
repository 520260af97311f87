# MITOS-ATYPIA-14, random keep-1 deletion, RTMDet-s: the detector's own loss (quality
# focal loss), the baseline. The parent of every MITOS-ATYPIA-14 x RTMDet-s experiment.
_base_ = [
    '../_base_/models/rtmdet_s.py',
    '../_base_/datasets/mitos14.py',
    '../_base_/deletion/keep1_random.py',
    '../_base_/schedules/adam_2580it.py',
    '../_base_/default_runtime.py',
]
model = dict(bbox_head=dict(num_classes=_base_.num_classes))
