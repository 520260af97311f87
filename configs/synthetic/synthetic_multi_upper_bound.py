# Synthetic multi-class cells (tumor / lymphocyte / stromal), complete annotations, slim
# model on CPU: upper bound (cross entropy).
_base_ = './synthetic_multi_cap2_ce.py'
deletion = None
