# CRCHistoPhenotypes, random keep-1 deletion, RetinaNet ResNet-50 FPN: PU learning.
# PURetinaHead makes one FocalPULoss call on all levels and images
# (docs/method.md#dense-detectors). pi (one per class): the share of anchors, over all
# levels, that the head's assigner makes positive for a cell among those it does not
# ignore, here the value measured on the synthetic binary task for slim RetinaNet
# (configs/dense/synthetic_retinanet_keep1_pu.py), a start only: the share depends on
# the cells' sizes and density, so measure it on this dataset's complete training labels
# by
#   python tools/positive_share.py configs/dense/crchisto_retinanet_r50_keep1_ce.py
_base_ = './crchisto_retinanet_r50_keep1_ce.py'
model = dict(bbox_head=dict(
    type='PURetinaHead',
    loss_cls=dict(type='FocalPULoss', prior=0.00832)))
