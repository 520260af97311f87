# NuCLS (tumor / lymphocyte / stromal), complete annotations, RTMDet-s: upper bound
# (quality focal loss).
_base_ = './nucls_rtmdet_s_cap10_ce.py'
deletion = None
