# Synthetic binary cells (mitosis-like cells among unannotated look-alikes), complete
# annotations, slim ATSS on CPU: upper bound (focal loss).
_base_ = './synthetic_atss_keep1_ce.py'
deletion = None
