# TUPAC16 (cases 01-23), one original label kept per patch, VGG16: PU learning (Section
# 3.4, Table 10). pi: the validation set selected 0.05 over 0.02-0.07 (Section 3.4).
_base_ = '../baselines/tupac_vgg16_keep1_ce.py'
model = dict(
    rpn_head=dict(
        type='PURPNHead',
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.05, use_sigmoid=True,
                      loss_weight=1.0)),
    roi_head=dict(bbox_head=dict(
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.05, use_sigmoid=False,
                      loss_weight=1.0))))
