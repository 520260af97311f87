# CRCHistoPhenotypes nuclei, random keep-1 deletion, slim model on CPU: PU learning as the
# paper runs it, one pi in both stages, chosen among 0.10-0.40 by the validation recall
# (Section 3.3; tools/sweep_prior.py). 0.3: the paper's choice.
_base_ = './crchisto_keep1_ce.py'
model = dict(
    rpn_head=dict(
        type='PURPNHead',
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.3, use_sigmoid=True,
                      loss_weight=1.0)),
    roi_head=dict(bbox_head=dict(
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.3, use_sigmoid=False,
                      loss_weight=1.0))))
