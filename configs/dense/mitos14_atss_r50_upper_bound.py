# MITOS-ATYPIA-14, complete annotations, ATSS ResNet-50 FPN: upper bound (focal loss).
_base_ = './mitos14_atss_r50_keep1_ce.py'
deletion = None
