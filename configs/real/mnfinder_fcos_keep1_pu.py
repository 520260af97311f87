# Real fluorescence nuclei (mnfinder), random keep-1 deletion, slim FCOS on CPU: PU
# learning (PUFCOSHead, one FocalPULoss call on all levels; docs/method.md#dense-
# detectors) at the synthetic keep-1 config's prior as a start: tools/fit_prior.py fits
# it to the data.
_base_ = './mnfinder_fcos_keep1_ce.py'
model = dict(bbox_head=dict(
    type='PUFCOSHead',
    loss_cls=dict(type='FocalPULoss', prior=0.0283)))
