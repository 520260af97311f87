# CRCHistoPhenotypes nuclei in four classes, keep-1 per class and tile, slim model on CPU:
# multi-class PU learning with the cell and its class factorized (FactorizedMultiPULoss:
# the PU bracket trains one background logit, the class posterior learns from the labeled
# cells alone; docs/method.md#factorized-multi-class-pu-risk), at the fixed priors.
_base_ = './crchisto_classes_keep1_mpu_fixed.py'
model = dict(roi_head=dict(bbox_head=dict(loss_cls=dict(type='FactorizedMultiPULoss'))))
