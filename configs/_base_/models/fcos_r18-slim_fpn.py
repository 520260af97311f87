# Slim FCOS for CPU runs: ResNet-18 FPN with 64 channels in the FPN and the head.
# Everything else (P2-P6 with regress ranges for 12-40 px cells at strides 4-8, random
# init with trainable BN statistics, the docs/method.md#evaluation test settings) is
# fcos_r50_fpn.py's.
_base_ = './fcos_r50_fpn.py'
model = dict(
    backbone=dict(depth=18),
    neck=dict(in_channels=[64, 128, 256, 512], out_channels=64),
    bbox_head=dict(in_channels=64, feat_channels=64))
