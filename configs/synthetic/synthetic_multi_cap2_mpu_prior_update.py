# Synthetic multi-class cells, at most two annotations per class and tile, slim model on
# CPU: multi-class PU learning with the paper's prior update (docs/method.md#prior-update).
# pi_1 = 0.1 for the most annotated class; the hook derives the others from detection
# counts and keeps the RPN prior at their sum. It starts once the randomly initialised
# detector finds cells of every class (begin_iter; before that the other priors would
# fall to their floor and lock those classes out) and runs on running counts (smoothing
# 0.9, about the last ten batches), which keeps one batch without tumor detections from
# sending the other priors to their bound. synthetic_multi_cap2_mpu.py trains with fixed
# priors estimated from this model instead.
_base_ = './synthetic_multi_cap2_ce.py'
model = dict(
    rpn_head=dict(
        type='PURPNHead',
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.27, use_sigmoid=True,
                      loss_weight=1.0)),
    roi_head=dict(bbox_head=dict(
        loss_cls=dict(_delete_=True, type='MultiPULoss', priors=[0.1, 0.1, 0.07],
                      loss_weight=1.0))))
custom_hooks = [
    dict(type='PriorUpdateHook', anchor_prior=0.1, score_thr=0.5, begin_iter=100,
         smoothing=0.9)]
