# Real fluorescence nuclei (mnfinder), random keep-1 deletion, RTMDet-tiny on CPU: PU
# learning (PURTMDetSepBNHead, one QualityFocalPULoss call on all levels;
# docs/method.md#dense-detectors) at the synthetic keep-1 config's prior as a start:
# tools/fit_prior.py fits it to the data.
_base_ = './mnfinder_rtmdet_keep1_ce.py'
model = dict(bbox_head=dict(
    type='PURTMDetSepBNHead',
    # nnPU (Kiryo et al.): where a batch's bracket r < 0, ascend on it instead of
    # dropping its negative risk (the clamp of Eq. 7), which left RTMDet's negatives
    # untrained in about half the batches on real nuclei
    # (docs/experiments.md#rtmdet-nnpu-through-the-own-data-workflow-fold-0-cpu).
    loss_cls=dict(type='QualityFocalPULoss', prior=0.0416, nonnegative='nnpu')))
