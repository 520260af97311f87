# Real fluorescence nuclei (mnfinder), complete annotations: upper bound (cross entropy).
_base_ = './mnfinder_keep1_ce.py'
deletion = None
