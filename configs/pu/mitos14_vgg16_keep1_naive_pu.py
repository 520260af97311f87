# MITOS-ATYPIA-14, random keep-1 deletion, VGG16: PU learning with the naive
# approximation, E_x[H(c,0)] over the unlabeled samples only (Section 3.2.2, Table 4;
# docs/method.md#naive-pu-and-nnpu).
_base_ = './mitos14_vgg16_keep1_pu.py'
model = dict(
    rpn_head=dict(loss_cls=dict(estimator='unlabeled')),
    roi_head=dict(bbox_head=dict(loss_cls=dict(estimator='unlabeled'))))
