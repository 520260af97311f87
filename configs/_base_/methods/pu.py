# PU learning (paper Section 2.2.1, docs/method.md#binary-pu-risk): the binary PULoss replaces cross entropy
# in both stages. E_x[H(c,0)] is estimated over U ∪ P, once per mini-batch (PURPNHead
# pools all FPN levels and images; the RoI head already pools the batch).
#
# After composition (docs/design.md) the prior pi is held by two keys; set both, e.g.
#   --cfg-options model.rpn_head.loss_cls.prior=0.04 model.roi_head.bbox_head.loss_cls.prior=0.04
rpn_head = dict(
    type='PURPNHead',
    loss_cls=dict(
        _delete_=True, type='PULoss', prior=0.035, use_sigmoid=True, loss_weight=1.0))
bbox_head = dict(
    loss_cls=dict(
        _delete_=True, type='PULoss', prior=0.035, use_sigmoid=False, loss_weight=1.0))
custom_hooks = []
