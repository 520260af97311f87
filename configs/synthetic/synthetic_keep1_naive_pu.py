# Synthetic binary cells, random keep-1 deletion, slim model on CPU: the naive PU
# approximation, E_x[H(c,0)] over the unlabeled samples only
# (docs/method.md#naive-pu-and-nnpu), at the PU config's priors, so that only the
# estimator differs.
_base_ = './synthetic_keep1_pu.py'
model = dict(
    rpn_head=dict(loss_cls=dict(estimator='unlabeled')),
    roi_head=dict(bbox_head=dict(loss_cls=dict(estimator='unlabeled'))))
