# Synthetic multi-class cells, at most two annotations per class and tile, slim model on
# CPU: multi-class PU learning with fixed priors (docs/method.md#departures) estimated by
# tools/estimate_prior.py from the provisional detector
# synthetic_multi_cap2_mpu_prior_update.py (seed 0): one prior per class for the RoI head,
# the label-frequency estimate for the RPN, so that each stage trains at its own prior.
# The update rule sets pi_m = pi_1 N_m / N_1 from detection counts, but a large tumor
# nucleus is covered by more RoIs than a lymphocyte, so no pi_1 gives every class its
# share. The RPN's PU risk is evaluated per FPN level (mmdet's RPNHead sums one risk per
# level), a departure from the one batch-level risk of the binary configs
# (docs/method.md#departures): a level without labeled cells then trains as plain
# negatives.
_base_ = './synthetic_multi_cap2_mpu_prior_update.py'
custom_hooks = []
model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=dict(priors=[0.206, 0.084, 0.089]))),
    rpn_head=dict(type='RPNHead', loss_cls=dict(prior=0.0467)))
