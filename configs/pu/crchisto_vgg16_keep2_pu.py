# CRCHistoPhenotypes, random keep-2 deletion, VGG16: PU learning (Section 3.3,
# Tables 7-9).
_base_ = './crchisto_vgg16_keep1_pu.py'
deletion = dict(k=2)
