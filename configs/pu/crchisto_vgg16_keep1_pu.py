# CRCHistoPhenotypes, random keep-1 deletion, VGG16: PU learning (Section 3.3, Tables
# 7-9). pi: the validation set selected 0.30 or 0.35 over 0.10-0.40 (Section 3.3), one
# pi in both stages; per-fold selection: tools/sweep_prior.py.
_base_ = '../baselines/crchisto_vgg16_keep1_ce.py'
model = dict(
    rpn_head=dict(
        type='PURPNHead',
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.3, use_sigmoid=True,
                      loss_weight=1.0)),
    roi_head=dict(bbox_head=dict(
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.3, use_sigmoid=False,
                      loss_weight=1.0))))
