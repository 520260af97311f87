# TUPAC16 (cases 01-23), complete annotations, Cascade R-CNN ResNet-50 FPN: upper bound
# (cross entropy).
_base_ = './tupac_cascade-rcnn_r50_keep1_ce.py'
deletion = None
