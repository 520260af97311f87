# Real fluorescence nuclei (mnfinder), random keep-1 deletion: PU with the box-fit
# negatives of the labeled cells learned as background (docs/method.md#box-fit-negatives).
_base_ = './mnfinder_keep1_pu.py'
model = dict(
    roi_head=dict(bbox_head=dict(type='BoxFitShared2FCBBoxHead')),
    train_cfg=dict(rcnn=dict(sampler=dict(type='OverlapRandomSampler'))))
