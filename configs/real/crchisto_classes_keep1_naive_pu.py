# CRCHistoPhenotypes nuclei in four classes, keep-1 per class and tile, slim model on CPU:
# the naive PU approximation (docs/method.md#naive-pu-and-nnpu) at the fixed priors.
_base_ = './crchisto_classes_keep1_mpu_fixed.py'
model = dict(
    rpn_head=dict(loss_cls=dict(estimator='unlabeled')),
    roi_head=dict(bbox_head=dict(loss_cls=dict(estimator='unlabeled'))))
