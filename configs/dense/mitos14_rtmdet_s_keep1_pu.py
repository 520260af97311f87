# MITOS-ATYPIA-14, random keep-1 deletion, RTMDet-s: PU learning. PURTMDetSepBNHead
# makes one QualityFocalPULoss call on all levels and images
# (docs/method.md#dense-detectors). pi (one per class): the share of points, over all
# levels, that the head's assigner makes positive for a cell among those it does not
# ignore, here the value measured on the synthetic binary task for RTMDet-tiny
# (configs/dense/synthetic_rtmdet_keep1_pu.py), a start only: the share depends on the
# cells' sizes and density, so measure it on this dataset's complete training labels by
#   python tools/positive_share.py configs/dense/mitos14_rtmdet_s_keep1_ce.py \
#         --checkpoint <mitos14_rtmdet_s_keep1_pu.py trained with the current values>
_base_ = './mitos14_rtmdet_s_keep1_ce.py'
model = dict(bbox_head=dict(
    type='PURTMDetSepBNHead',
    loss_cls=dict(type='QualityFocalPULoss', prior=0.0416)))
