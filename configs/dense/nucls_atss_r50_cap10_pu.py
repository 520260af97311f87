# NuCLS (tumor / lymphocyte / stromal), at most ten annotations per class and image,
# ATSS ResNet-50 FPN: PU learning. PUATSSHead makes one FocalPULoss call on all levels
# and images (docs/method.md#dense-detectors). pi (one per class): the share of anchors,
# over all levels, that the head's assigner makes positive for a cell among those it
# does not ignore, here the value measured on the synthetic multi-class task for slim
# ATSS (configs/dense/synthetic_multi_atss_cap2_pu.py), a start only: the share depends
# on the cells' sizes and density, so measure it on this dataset's complete training
# labels by
#   python tools/positive_share.py configs/dense/nucls_atss_r50_cap10_ce.py
_base_ = './nucls_atss_r50_cap10_ce.py'
model = dict(bbox_head=dict(
    type='PUATSSHead',
    loss_cls=dict(type='FocalPULoss', priors=[0.0127, 0.00929, 0.00666])))
