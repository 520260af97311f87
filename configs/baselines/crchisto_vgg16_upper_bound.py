# CRCHistoPhenotypes, complete annotations, VGG16: upper bound, cross entropy (Section
# 3.3, Tables 7-9).
_base_ = './crchisto_vgg16_keep1_ce.py'
deletion = None
