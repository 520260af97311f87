# Synthetic multi-class cells (tumor / lymphocyte / stromal), complete annotations, slim
# ATSS on CPU: upper bound (focal loss).
_base_ = './synthetic_multi_atss_cap2_ce.py'
deletion = None
