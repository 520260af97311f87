# Synthetic binary cells, complete annotations, slim model on CPU: upper bound (cross
# entropy).
_base_ = './synthetic_keep1_ce.py'
deletion = None
