# NuCLS, at most ten annotations per class and image, VGG16: multi-class PU learning with
# the per-batch prior update (Section 3.5, Table 11; docs/method.md#multi-class-pu-risk,
# docs/method.md#prior-update). The RoI head's MultiPULoss holds one prior per class (the
# initial values here); the binary RPN's PULoss holds their sum, and the PriorUpdateHook
# sets pi_m = pi_1 N_m / N_1 before every step and keeps the RPN prior at the sum.
# pi_1 = 0.3 for the tumor class, the value the validation set selected over 0.20-0.40
# (Section 3.5): --cfg-options custom_hooks.0.anchor_prior=<pi_1>.
_base_ = '../baselines/nucls_vgg16_ce.py'
model = dict(
    rpn_head=dict(
        type='PURPNHead',
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.6, use_sigmoid=True,
                      loss_weight=1.0)),
    roi_head=dict(bbox_head=dict(
        loss_cls=dict(_delete_=True, type='MultiPULoss', priors=[0.3, 0.2, 0.1],
                      loss_weight=1.0))))
custom_hooks = [dict(type='PriorUpdateHook', anchor_prior=0.3, score_thr=0.5)]
