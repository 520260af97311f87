# Synthetic regime "sparse", complete annotations, slim ATSS on CPU: upper bound (focal
# loss).
_base_ = './synthetic_sparse_atss_keep1_ce.py'
deletion = None
