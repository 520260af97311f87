# MITOS-ATYPIA-14, complete annotations, VGG16: upper bound, cross entropy
# (Section 3.2.1, Tables 1-3; Appendix B (pi) and C (repeated runs)).
_base_ = './mitos14_vgg16_keep1_ce.py'
deletion = None
