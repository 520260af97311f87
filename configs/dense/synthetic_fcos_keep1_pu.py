# Synthetic binary cells (mitosis-like cells among unannotated look-alikes), random
# keep-1 deletion, slim FCOS on CPU: PU learning. FCOSHead already makes one loss_cls
# call on all levels and images; PUFCOSHead keeps that guarantee
# (docs/method.md#dense-detectors). pi (one per class): the share of points, over all
# levels, that FCOS's regress ranges and centre regions make positive for a cell, counted
# with the complete training labels (three significant digits) by
#   python tools/positive_share.py configs/dense/synthetic_fcos_keep1_ce.py
# The assignment depends on the points alone: the model's weights do not enter.
_base_ = './synthetic_fcos_keep1_ce.py'
model = dict(bbox_head=dict(
    type='PUFCOSHead',
    loss_cls=dict(type='FocalPULoss', prior=0.0283)))
