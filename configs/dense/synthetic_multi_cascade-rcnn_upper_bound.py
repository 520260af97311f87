# Synthetic multi-class cells (tumor / lymphocyte / stromal), complete annotations, slim
# Cascade R-CNN on CPU: upper bound (cross entropy).
_base_ = './synthetic_multi_cascade-rcnn_cap2_ce.py'
deletion = None
