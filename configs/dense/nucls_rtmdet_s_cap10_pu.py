# NuCLS (tumor / lymphocyte / stromal), at most ten annotations per class and image,
# RTMDet-s: PU learning. PURTMDetSepBNHead makes one QualityFocalPULoss call on all
# levels and images (docs/method.md#dense-detectors). pi (one per class): the share of
# points, over all levels, that the head's assigner makes positive for a cell among
# those it does not ignore, here the value measured on the synthetic multi-class task
# for RTMDet-tiny (configs/dense/synthetic_multi_rtmdet_cap2_pu.py), a start only: the
# share depends on the cells' sizes and density, so measure it on this dataset's
# complete training labels by
#   python tools/positive_share.py configs/dense/nucls_rtmdet_s_cap10_ce.py \
#         --checkpoint <nucls_rtmdet_s_cap10_pu.py trained with the current values>
_base_ = './nucls_rtmdet_s_cap10_ce.py'
model = dict(bbox_head=dict(
    type='PURTMDetSepBNHead',
    loss_cls=dict(type='QualityFocalPULoss', priors=[0.0258, 0.00714, 0.00924])))
