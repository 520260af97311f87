# MITOS-ATYPIA-14, complete annotations, RTMDet-s: upper bound (quality focal loss).
_base_ = './mitos14_rtmdet_s_keep1_ce.py'
deletion = None
