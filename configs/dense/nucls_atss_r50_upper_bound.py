# NuCLS (tumor / lymphocyte / stromal), complete annotations, ATSS ResNet-50 FPN: upper
# bound (focal loss).
_base_ = './nucls_atss_r50_cap10_ce.py'
deletion = None
