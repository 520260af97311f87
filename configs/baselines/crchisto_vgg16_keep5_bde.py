# CRCHistoPhenotypes, random keep-5 deletion, VGG16: BDE baseline (Section 3.3,
# Tables 7-9).
_base_ = './crchisto_vgg16_keep1_bde.py'
deletion = dict(k=5)
