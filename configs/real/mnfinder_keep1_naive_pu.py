# Real fluorescence nuclei (mnfinder), random keep-1 deletion: the naive PU approximation
# (docs/method.md#naive-pu-and-nnpu) at the PU config's priors.
_base_ = './mnfinder_keep1_pu.py'
model = dict(
    rpn_head=dict(loss_cls=dict(estimator='unlabeled')),
    roi_head=dict(bbox_head=dict(loss_cls=dict(estimator='unlabeled'))))
