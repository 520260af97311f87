# Slim Faster R-CNN for CPU runs: ResNet-18 FPN with 64 channels, 300 proposals and 128 RoIs
# per image in training. Everything else (anchors for 12-32 px cells, random init with
# trainable BN statistics, the docs/method.md#evaluation test settings: 1000 proposals, so
# that a dense patch's ~300 nuclei all get one) is faster-rcnn_r50_fpn.py's.
_base_ = './faster-rcnn_r50_fpn.py'
model = dict(
    backbone=dict(depth=18),
    neck=dict(in_channels=[64, 128, 256, 512], out_channels=64),
    rpn_head=dict(in_channels=64, feat_channels=64),
    roi_head=dict(
        bbox_roi_extractor=dict(out_channels=64),
        bbox_head=dict(in_channels=64, fc_out_channels=256)),
    train_cfg=dict(
        rpn_proposal=dict(nms_pre=1000, max_per_img=300),
        rcnn=dict(sampler=dict(num=128))))
