# Synthetic multi-class cells (tumor / lymphocyte / stromal), at most two annotations
# per class and 256 px tile, slim Cascade R-CNN on CPU: PU learning. PURPNHead + binary
# PULoss in the RPN and a PU loss in each stage's box head, softmax form
# (docs/method.md#cascade-r-cnn), each with its prior (docs/method.md#priors-per-stage):
# the share of cells among the anchors the RPN samples, and among the RoIs each stage
# samples (one per class), counted with the complete training labels (three significant
# digits) by
#   python tools/positive_share.py configs/dense/synthetic_multi_cascade-rcnn_cap2_ce.py \
#         --checkpoint <work dir of synthetic_multi_cascade-rcnn_cap2_pu.py>/iter_300.pth
# The assignment depends on the predictions, so the shares are this detector's:
# synthetic_multi_cascade-rcnn_cap2_pu.py trained for the 300 iterations of cpu_short
# with the values of the previous measurement (the first time with the shares of
# synthetic_multi_cascade-rcnn_upper_bound.py trained likewise), the step repeated until
# no share moved by more than a tenth.
_base_ = './synthetic_multi_cascade-rcnn_cap2_ce.py'
model = dict(
    rpn_head=dict(type='PURPNHead',
                  loss_cls=dict(type='PULoss', prior=0.0352)),
    roi_head=dict(bbox_head=[
        dict(head, loss_cls=dict(head['loss_cls'], type='MultiPULoss', priors=stage))
        for head, stage in zip(
            _base_.model.roi_head.bbox_head,
            [
                [0.271, 0.165, 0.124],
                [0.39, 0.217, 0.188],
                [0.399, 0.22, 0.201],
            ])]))
