# NuCLS, complete annotations, VGG16: upper bound, cross entropy (Section 3.5, Table 11).
_base_ = './nucls_vgg16_ce.py'
deletion = None
