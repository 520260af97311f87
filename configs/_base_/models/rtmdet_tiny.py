# RTMDet-tiny for CPU runs: mmdet 3.3.0's rtmdet_tiny_8xb32-300e_coco.py sizes
# (CSPNeXt deepen 0.167 / widen 0.375, 96 channels in the PAFPN and the head).
# Everything else (strides 8-32, BN, random init, [-1, 1] inputs padded to 32, the
# docs/method.md#evaluation test settings) is rtmdet_s.py's.
_base_ = './rtmdet_s.py'
model = dict(
    backbone=dict(deepen_factor=0.167, widen_factor=0.375),
    neck=dict(in_channels=[96, 192, 384], out_channels=96),
    bbox_head=dict(in_channels=96, feat_channels=96))
