# CRCHistoPhenotypes, random keep-5 deletion, VGG16: cross-entropy baseline (Section 3.3,
# Tables 7-9).
_base_ = './crchisto_vgg16_keep1_ce.py'
deletion = dict(k=5)
