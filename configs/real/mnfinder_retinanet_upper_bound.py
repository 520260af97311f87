# Real fluorescence nuclei (mnfinder), complete annotations, slim RetinaNet on CPU: upper
# bound (the detector's own loss).
_base_ = './mnfinder_retinanet_keep1_ce.py'
deletion = None
