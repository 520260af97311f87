# Real fluorescence nuclei (mnfinder), random keep-1 deletion, slim RetinaNet on CPU: PU
# learning (PURetinaHead, one FocalPULoss call on all levels; docs/method.md#dense-
# detectors) at the synthetic keep-1 config's prior as a start: tools/fit_prior.py fits
# it to the data.
_base_ = './mnfinder_retinanet_keep1_ce.py'
model = dict(bbox_head=dict(
    type='PURetinaHead',
    loss_cls=dict(type='FocalPULoss', prior=0.00832)))
