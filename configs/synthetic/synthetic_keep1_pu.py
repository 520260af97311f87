# Synthetic binary cells, random keep-1 deletion, slim model on CPU: PU learning with a
# prior per stage (docs/method.md#priors-per-stage). The RoI head's pi was selected by
# validation recall (tools/sweep_prior.py); the RPN's is the share of cells among the
# anchors it samples, which are drawn over the whole image where cells are rare.
_base_ = './synthetic_keep1_ce.py'
model = dict(
    rpn_head=dict(
        type='PURPNHead',
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.006, use_sigmoid=True,
                      loss_weight=1.0)),
    roi_head=dict(bbox_head=dict(
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.25, use_sigmoid=False,
                      loss_weight=1.0))))
