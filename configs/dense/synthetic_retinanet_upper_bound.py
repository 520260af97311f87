# Synthetic binary cells (mitosis-like cells among unannotated look-alikes), complete
# annotations, slim RetinaNet on CPU: upper bound (focal loss).
_base_ = './synthetic_retinanet_keep1_ce.py'
deletion = None
