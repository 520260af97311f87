# NuCLS (tumor / lymphocyte / stromal), complete annotations, Cascade R-CNN ResNet-50
# FPN: upper bound (cross entropy).
_base_ = './nucls_cascade-rcnn_r50_cap10_ce.py'
deletion = None
