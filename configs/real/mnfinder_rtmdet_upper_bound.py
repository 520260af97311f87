# Real fluorescence nuclei (mnfinder), complete annotations, RTMDet-tiny on CPU: upper
# bound (the detector's own loss).
_base_ = './mnfinder_rtmdet_keep1_ce.py'
deletion = None
