# Synthetic binary cells (mitosis-like cells among unannotated look-alikes), complete
# annotations, slim Cascade R-CNN on CPU: upper bound (cross entropy).
_base_ = './synthetic_cascade-rcnn_keep1_ce.py'
deletion = None
