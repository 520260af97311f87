# MITOS-ATYPIA-14, random keep-1 deletion, Cascade R-CNN ResNet-50 FPN: PU learning.
# PURPNHead + binary PULoss in the RPN and a PU loss in each stage's box head, softmax
# form (docs/method.md#cascade-r-cnn), each with its prior
# (docs/method.md#priors-per-stage): the share of cells among the anchors the RPN
# samples, and among the RoIs each stage samples (one per class), here the value
# measured on the synthetic binary task for slim Cascade R-CNN
# (configs/dense/synthetic_cascade-rcnn_keep1_pu.py), a start only: the share depends on
# the cells' sizes and density, so measure it on this dataset's complete training labels
# by
#   python tools/positive_share.py configs/dense/mitos14_cascade-rcnn_r50_keep1_ce.py \
#         --checkpoint <mitos14_cascade-rcnn_r50_keep1_pu.py trained with the current values>
_base_ = './mitos14_cascade-rcnn_r50_keep1_ce.py'
model = dict(
    rpn_head=dict(type='PURPNHead',
                  loss_cls=dict(type='PULoss', prior=0.00679)),
    roi_head=dict(bbox_head=[
        dict(head, loss_cls=dict(head['loss_cls'], type='PULoss', prior=stage))
        for head, stage in zip(
            _base_.model.roi_head.bbox_head,
            [0.37, 0.496, 0.521])]))
