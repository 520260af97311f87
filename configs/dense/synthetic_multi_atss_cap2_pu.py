# Synthetic multi-class cells (tumor / lymphocyte / stromal), at most two annotations
# per class and 256 px tile, slim ATSS on CPU: PU learning. PUATSSHead makes one
# FocalPULoss call on all levels and images (docs/method.md#dense-detectors). pi (one
# per class): the share of anchors, over all levels, that the head's assigner makes
# positive for a cell among those it does not ignore, counted with the complete training
# labels (three significant digits) by
#   python tools/positive_share.py configs/dense/synthetic_multi_atss_cap2_ce.py
# The assignment depends on the anchors alone: the model's weights do not enter.
_base_ = './synthetic_multi_atss_cap2_ce.py'
model = dict(bbox_head=dict(
    type='PUATSSHead',
    loss_cls=dict(type='FocalPULoss', priors=[0.0127, 0.00929, 0.00666])))
