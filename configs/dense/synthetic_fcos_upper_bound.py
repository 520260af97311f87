# Synthetic binary cells (mitosis-like cells among unannotated look-alikes), complete
# annotations, slim FCOS on CPU: upper bound (focal loss).
_base_ = './synthetic_fcos_keep1_ce.py'
deletion = None
