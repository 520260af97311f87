# Real fluorescence nuclei (mnfinder), complete annotations, slim FCOS on CPU: upper
# bound (the detector's own loss).
_base_ = './mnfinder_fcos_keep1_ce.py'
deletion = None
