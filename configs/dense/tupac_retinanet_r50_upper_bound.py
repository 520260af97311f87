# TUPAC16 (cases 01-23), complete annotations, RetinaNet ResNet-50 FPN: upper bound
# (focal loss).
_base_ = './tupac_retinanet_r50_keep1_ce.py'
deletion = None
