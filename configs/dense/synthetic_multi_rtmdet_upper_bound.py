# Synthetic multi-class cells (tumor / lymphocyte / stromal), complete annotations,
# RTMDet-tiny on CPU: upper bound (quality focal loss).
_base_ = './synthetic_multi_rtmdet_cap2_ce.py'
deletion = None
