# TUPAC16 (cases 01-23), complete annotations, RTMDet-s: upper bound (quality focal
# loss).
_base_ = './tupac_rtmdet_s_keep1_ce.py'
deletion = None
