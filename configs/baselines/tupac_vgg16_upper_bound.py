# TUPAC16 (cases 01-23), complete (alternative) labels, VGG16: upper bound, cross
# entropy (Section 3.4, Table 10).
_base_ = './tupac_vgg16_keep1_ce.py'
deletion = None
