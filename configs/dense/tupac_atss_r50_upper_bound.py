# TUPAC16 (cases 01-23), complete annotations, ATSS ResNet-50 FPN: upper bound (focal
# loss).
_base_ = './tupac_atss_r50_keep1_ce.py'
deletion = None
