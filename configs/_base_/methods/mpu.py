# Multi-class PU learning (paper Section 2.2.2, docs/method.md#multi-class-pu-risk) for 3 cell types (NuCLS).
# The RoI head uses MultiPULoss with one prior per class (softmax over the classes and
# the background); the class-agnostic RPN uses the binary PULoss with the total positive
# prior sum_m pi_m (docs/method.md#multi-class-pu-risk). The priors given here are initial values: the
# PriorUpdateHook in this file's custom_hooks re-estimates pi_m for m != 1 every
# iteration from pi_1 (Section 2.3) and keeps the RPN prior equal to their sum.
#
# After composition (docs/design.md) the priors are held by
#   model.roi_head.bbox_head.loss_cls.priors   (list, one value per class, sum < 1)
#   model.rpn_head.loss_cls.prior              (their sum)
rpn_head = dict(
    type='PURPNHead',
    loss_cls=dict(
        _delete_=True, type='PULoss', prior=0.6, use_sigmoid=True, loss_weight=1.0))
bbox_head = dict(
    loss_cls=dict(
        _delete_=True, type='MultiPULoss', priors=[0.3, 0.2, 0.1], loss_weight=1.0))
# pi_1 (the prior of the most annotated class) is the hyperparameter of the grid search
# (Section 2.3): --cfg-options custom_hooks.0.anchor_prior=0.25
custom_hooks = [dict(type='PriorUpdateHook', anchor_prior=0.3, score_thr=0.5)]
