# MITOS-ATYPIA-14, highest-agreement cell kept per patch, VGG16: BDE baseline (Section
# 3.2.4, Table 6).
_base_ = './mitos14_vgg16_keep1_bde.py'
deletion = dict(order='score')
