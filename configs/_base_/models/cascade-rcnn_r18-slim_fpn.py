# Slim Cascade R-CNN for CPU runs: ResNet-18 FPN with 64 channels, box heads with two fc
# of 256, 300 proposals and 128 RoIs per image and stage in training, as
# faster-rcnn_r18-slim_fpn.py. Everything else (16-256 px anchors for 12-40 px cells, random
# init with trainable BN statistics, the docs/method.md#evaluation test settings: 1000
# proposals) is cascade-rcnn_r50_fpn.py's.
_base_ = './cascade-rcnn_r50_fpn.py'
model = dict(
    backbone=dict(depth=18),
    neck=dict(in_channels=[64, 128, 256, 512], out_channels=64),
    rpn_head=dict(in_channels=64, feat_channels=64),
    roi_head=dict(
        bbox_roi_extractor=dict(out_channels=64),
        bbox_head=[
            dict(head, in_channels=64, fc_out_channels=256)
            for head in _base_.model.roi_head.bbox_head]),
    train_cfg=dict(
        rpn_proposal=dict(nms_pre=1000, max_per_img=300),
        rcnn=[dict(stage, sampler=dict(stage['sampler'], num=128))
              for stage in _base_.model.train_cfg.rcnn]))
