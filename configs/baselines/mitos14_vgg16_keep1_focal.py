# MITOS-ATYPIA-14, random keep-1 deletion, VGG16: focal-loss baseline (Appendix A, Table
# A1; Lin et al. 2017): alpha = 0.25, gamma = 2 in both stages,
#   H_focal(c, z) = -alpha z (1-c)^gamma log(c) - (1-alpha)(1-z) c^gamma log(1-c).
# The RoI head uses RoIFocalLoss: mmdet's FocalLoss with one sigmoid logit per class.
_base_ = './mitos14_vgg16_keep1_ce.py'
model = dict(
    rpn_head=dict(loss_cls=dict(
        _delete_=True, type='FocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25,
        loss_weight=1.0)),
    roi_head=dict(bbox_head=dict(loss_cls=dict(
        _delete_=True, type='RoIFocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25,
        loss_weight=1.0))))
