# MITOS-ATYPIA-14, complete annotations, ResNet-50 FPN: upper bound, cross entropy
# (Section 3.2.3, Table 5).
_base_ = './mitos14_r50_keep1_ce.py'
deletion = None
