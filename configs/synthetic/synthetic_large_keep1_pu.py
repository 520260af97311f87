# Synthetic regime "large": large mitosis-like cells (28-40 px), random keep-1 deletion,
# slim model on CPU: PU learning at the default synthetic priors
# (synthetic_keep1_pu.py), the provisional training of the prior workflow.
_base_ = './synthetic_large_keep1_ce.py'
model = dict(
    rpn_head=dict(
        type='PURPNHead',
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.006, use_sigmoid=True,
                      loss_weight=1.0)),
    roi_head=dict(bbox_head=dict(
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.25, use_sigmoid=False,
                      loss_weight=1.0))))
