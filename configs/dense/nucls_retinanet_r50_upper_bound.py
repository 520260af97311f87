# NuCLS (tumor / lymphocyte / stromal), complete annotations, RetinaNet ResNet-50 FPN:
# upper bound (focal loss).
_base_ = './nucls_retinanet_r50_cap10_ce.py'
deletion = None
