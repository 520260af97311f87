# Synthetic binary cells (mitosis-like cells among unannotated look-alikes), random
# keep-1 deletion, slim Cascade R-CNN on CPU: PU learning. PURPNHead + binary PULoss in
# the RPN and a PU loss in each stage's box head, softmax form
# (docs/method.md#cascade-r-cnn), each with its prior (docs/method.md#priors-per-stage):
# the share of cells among the anchors the RPN samples, and among the RoIs each stage
# samples (one per class), counted with the complete training labels (three significant
# digits) by
#   python tools/positive_share.py configs/dense/synthetic_cascade-rcnn_keep1_ce.py \
#         --checkpoint <work dir of synthetic_cascade-rcnn_keep1_pu.py>/iter_300.pth
# The assignment depends on the predictions, so the shares are this detector's:
# synthetic_cascade-rcnn_keep1_pu.py trained for the 300 iterations of cpu_short with
# the values of the previous measurement (the first time with the shares of
# synthetic_cascade-rcnn_upper_bound.py trained likewise), the step repeated until no
# share moved by more than a tenth.
_base_ = './synthetic_cascade-rcnn_keep1_ce.py'
model = dict(
    rpn_head=dict(type='PURPNHead',
                  loss_cls=dict(type='PULoss', prior=0.00679)),
    roi_head=dict(bbox_head=[
        dict(head, loss_cls=dict(head['loss_cls'], type='PULoss', prior=stage))
        for head, stage in zip(
            _base_.model.roi_head.bbox_head,
            [0.37, 0.496, 0.521])]))
