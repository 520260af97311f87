# TUPAC16 (cases 01-23), one original label kept per patch, RTMDet-s: the detector's own
# loss (quality focal loss), the baseline. The parent of every TUPAC16 (cases 01-23) x
# RTMDet-s experiment.
_base_ = [
    '../_base_/models/rtmdet_s.py',
    '../_base_/datasets/tupac.py',
    '../_base_/deletion/tupac_original_keep1.py',
    '../_base_/schedules/adam_2580it.py',
    '../_base_/default_runtime.py',
]
model = dict(bbox_head=dict(num_classes=_base_.num_classes))
