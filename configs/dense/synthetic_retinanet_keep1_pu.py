# Synthetic binary cells (mitosis-like cells among unannotated look-alikes), random
# keep-1 deletion, slim RetinaNet on CPU: PU learning. PURetinaHead makes one
# FocalPULoss call on all levels and images (docs/method.md#dense-detectors). pi (one
# per class): the share of anchors, over all levels, that the head's assigner makes
# positive for a cell among those it does not ignore, counted with the complete training
# labels (three significant digits) by
#   python tools/positive_share.py configs/dense/synthetic_retinanet_keep1_ce.py
# The assignment depends on the anchors alone: the model's weights do not enter.
_base_ = './synthetic_retinanet_keep1_ce.py'
model = dict(bbox_head=dict(
    type='PURetinaHead',
    loss_cls=dict(type='FocalPULoss', prior=0.00832)))
