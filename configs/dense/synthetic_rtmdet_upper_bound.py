# Synthetic binary cells (mitosis-like cells among unannotated look-alikes), complete
# annotations, RTMDet-tiny on CPU: upper bound (quality focal loss).
_base_ = './synthetic_rtmdet_keep1_ce.py'
deletion = None
