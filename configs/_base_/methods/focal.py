# Baseline with focal loss (Appendix A, Eq. A2; Lin et al. 2017): alpha = 0.25, gamma = 2
#   H_focal(c, z) = -alpha z (1-c)^gamma log(c) - (1-alpha)(1-z) c^gamma log(1-c)
# in both stages. The RPN is already sigmoid. The RoI head uses RoIFocalLoss, mmdet's
# FocalLoss with one sigmoid logit per class (no background logit) in BBoxHead.
rpn_head = dict(
    type='RPNHead',
    loss_cls=dict(
        _delete_=True, type='FocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25,
        loss_weight=1.0))
bbox_head = dict(
    type='Shared2FCBBoxHead',
    loss_cls=dict(
        _delete_=True, type='RoIFocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25,
        loss_weight=1.0))
custom_hooks = []
