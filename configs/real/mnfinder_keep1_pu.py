# Real fluorescence nuclei (mnfinder), random keep-1 deletion: PU learning with a prior
# per stage (docs/method.md#priors-per-stage), the synthetic keep-1 config's priors as a
# start; tools/fit_prior.py fits them to the data.
_base_ = './mnfinder_keep1_ce.py'
model = dict(
    rpn_head=dict(
        type='PURPNHead',
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.006, use_sigmoid=True,
                      loss_weight=1.0)),
    roi_head=dict(bbox_head=dict(
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.25, use_sigmoid=False,
                      loss_weight=1.0))))
