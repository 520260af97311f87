# Real fluorescence nuclei (mnfinder), complete annotations, slim ATSS on CPU: upper
# bound (the detector's own loss).
_base_ = './mnfinder_atss_keep1_ce.py'
deletion = None
