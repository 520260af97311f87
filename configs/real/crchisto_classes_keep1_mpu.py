# CRCHistoPhenotypes nuclei in four classes, keep-1 per class and tile, slim model on CPU:
# multi-class PU learning with the paper's prior update (docs/method.md#prior-update).
# The RoI head's MultiPULoss holds one prior per class; the PriorUpdateHook sets
# pi_m = pi_1 N_m / N_1 from the detection counts before every step (from begin_iter,
# on running counts: smoothing 0.9). The anchor is the hook's default, the class most
# annotated after the deletion: inflammatory under keep-1 per class (the class present
# in the most tiles), held at pi_1 = 0.09 (about a third of the binary RoI prior 0.25;
# the inflammatory share of 0.25 is 0.078). The binary RPN keeps its own prior instead of the
# classes' sum (a prior per stage: docs/method.md#priors-per-stage).
_base_ = './crchisto_classes_keep1_ce.py'
model = dict(
    rpn_head=dict(
        type='PURPNHead',
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.006, use_sigmoid=True,
                      loss_weight=1.0)),
    roi_head=dict(bbox_head=dict(
        loss_cls=dict(_delete_=True, type='MultiPULoss', priors=[0.09, 0.06, 0.08, 0.02],
                      loss_weight=1.0))))
custom_hooks = [
    dict(type='PriorUpdateHook', anchor_prior=0.09, score_thr=0.5, begin_iter=100,
         smoothing=0.9, update_rpn_prior=False)]
