# Real fluorescence nuclei (mnfinder), random keep-1 deletion, slim Cascade R-CNN: PU with
# the box-fit negatives of the labeled cells learned as background by every stage
# (docs/method.md#box-fit-negatives; a stage's negatives are those below its own IoU).
_base_ = './mnfinder_cascade-rcnn_keep1_pu.py'
model = dict(
    roi_head=dict(bbox_head=[dict(head, type='BoxFitShared2FCBBoxHead')
                             for head in _base_.model.roi_head.bbox_head]),
    train_cfg=dict(rcnn=[dict(stage, sampler=dict(stage['sampler'], type='OverlapRandomSampler'))
                         for stage in _base_.model.train_cfg.rcnn]))
