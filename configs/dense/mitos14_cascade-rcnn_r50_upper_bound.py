# MITOS-ATYPIA-14, complete annotations, Cascade R-CNN ResNet-50 FPN: upper bound (cross
# entropy).
_base_ = './mitos14_cascade-rcnn_r50_keep1_ce.py'
deletion = None
