# NuCLS (tumor / lymphocyte / stromal), at most ten annotations per class and image,
# Cascade R-CNN ResNet-50 FPN: PU learning. PURPNHead + binary PULoss in the RPN and a
# PU loss in each stage's box head, softmax form (docs/method.md#cascade-r-cnn), each
# with its prior (docs/method.md#priors-per-stage): the share of cells among the anchors
# the RPN samples, and among the RoIs each stage samples (one per class), here the value
# measured on the synthetic multi-class task for slim Cascade R-CNN
# (configs/dense/synthetic_multi_cascade-rcnn_cap2_pu.py), a start only: the share
# depends on the cells' sizes and density, so measure it on this dataset's complete
# training labels by
#   python tools/positive_share.py configs/dense/nucls_cascade-rcnn_r50_cap10_ce.py \
#         --checkpoint <nucls_cascade-rcnn_r50_cap10_pu.py trained with the current values>
_base_ = './nucls_cascade-rcnn_r50_cap10_ce.py'
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
