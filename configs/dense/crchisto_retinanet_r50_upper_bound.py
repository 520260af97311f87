# CRCHistoPhenotypes, complete annotations, RetinaNet ResNet-50 FPN: upper bound (focal
# loss).
_base_ = './crchisto_retinanet_r50_keep1_ce.py'
deletion = None
