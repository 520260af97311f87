# CRCHistoPhenotypes, complete annotations, RTMDet-s: upper bound (quality focal loss).
_base_ = './crchisto_rtmdet_s_keep1_ce.py'
deletion = None
