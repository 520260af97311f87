# MITOS-ATYPIA-14, highest-agreement cell kept per patch, VGG16: cross-entropy baseline
# (Section 3.2.4, Table 6).
_base_ = './mitos14_vgg16_keep1_ce.py'
deletion = dict(order='score')
