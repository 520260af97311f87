# CRCHistoPhenotypes, complete annotations, Cascade R-CNN ResNet-50 FPN: upper bound
# (cross entropy).
_base_ = './crchisto_cascade-rcnn_r50_keep1_ce.py'
deletion = None
