# Real fluorescence nuclei (mnfinder), random keep-1 deletion, RTMDet-tiny on CPU: PU
# learning (PURTMDetSepBNHead, one QualityFocalPULoss call on all levels;
# docs/method.md#dense-detectors) at the synthetic keep-1 config's prior as a start:
# tools/fit_prior.py fits it to the data.
_base_ = './mnfinder_rtmdet_keep1_ce.py'
model = dict(bbox_head=dict(
    type='PURTMDetSepBNHead',
    # nnPU instead of the clamp (why: configs/dense/synthetic_rtmdet_keep1_pu.py)
    loss_cls=dict(type='QualityFocalPULoss', prior=0.0416, nonnegative='nnpu')))
