# Real fluorescence nuclei (mnfinder), complete annotations, slim Cascade R-CNN on CPU: upper
# bound (the detector's own loss).
_base_ = './mnfinder_cascade-rcnn_keep1_ce.py'
deletion = None
