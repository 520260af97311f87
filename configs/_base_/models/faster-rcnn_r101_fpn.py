# Faster R-CNN with ResNet-101 FPN (Section 3.2.3): faster-rcnn_r50_fpn.py with depth 101.
_base_ = './faster-rcnn_r50_fpn.py'
model = dict(backbone=dict(depth=101))
