# Synthetic multi-class cells (tumor / lymphocyte / stromal), complete annotations, slim
# RetinaNet on CPU: upper bound (focal loss).
_base_ = './synthetic_multi_retinanet_cap2_ce.py'
deletion = None
