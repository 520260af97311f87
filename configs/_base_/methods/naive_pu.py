# Naive PU approximation (paper Section 2.2.1, compared in Section 3.2.2): as pu.py, but
# E_x[H(c,0)] is estimated over the unlabeled samples only (Yang et al., BMVC 2020).
#
# After composition (docs/design.md) the prior pi is held by two keys; set both, e.g.
#   --cfg-options model.rpn_head.loss_cls.prior=0.04 model.roi_head.bbox_head.loss_cls.prior=0.04
rpn_head = dict(
    type='PURPNHead',
    loss_cls=dict(
        _delete_=True, type='PULoss', prior=0.035, use_sigmoid=True,
        estimator='unlabeled', loss_weight=1.0))
bbox_head = dict(
    loss_cls=dict(
        _delete_=True, type='PULoss', prior=0.035, use_sigmoid=False,
        estimator='unlabeled', loss_weight=1.0))
custom_hooks = []
