# MITOS-ATYPIA-14, random keep-1 deletion, ResNet-50 FPN: PU learning
# (docs/method.md#binary-pu-risk)
# (Section 3.2.3, Table 5).
# pi: the validation set selected 0.035-0.045 over 0.025-0.050 (Section 3.2.1), one pi
# in both stages; per-fold selection: tools/sweep_prior.py.
_base_ = '../baselines/mitos14_r50_keep1_ce.py'
model = dict(
    rpn_head=dict(
        type='PURPNHead',
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.04, use_sigmoid=True,
                      loss_weight=1.0)),
    roi_head=dict(bbox_head=dict(
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.04, use_sigmoid=False,
                      loss_weight=1.0))))
