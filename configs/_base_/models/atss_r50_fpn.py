# ATSS with ResNet-50 FPN (docs/method.md#dense-detectors): mmdet 3.3.0's model of
# atss/atss_r50_fpn_1x_coco.py (focal loss, GIoU box loss, centerness, ATSSAssigner with
# the nine candidates closest to a box's centre per level, one square anchor per
# location) except:
#  * FPN levels P2-P6 (start_level=0, strides 4-64) instead of P3-P7 (8-128), and
#    anchors of 4 x stride instead of 8 x stride (octave_base_scale=4): 16 px at stride
#    4, 32 px at stride 8. ATSS makes a candidate positive when its IoU with the cell
#    exceeds the mean plus the standard deviation of its candidates' IoUs and its centre
#    lies inside the cell: a 12 px cell contains nine stride-4 centres and meets their
#    16 px anchors at IoU up to 0.56, where mmdet's anchors (64 px at stride 8) meet it at
#    IoU <= 0.04, with one to four stride-8 centres inside and box targets 5x smaller
#    than the anchor;
#  * random init with trainable BN statistics (norm_eval=False, nothing frozen), as the
#    Faster R-CNN bases; ImageNet weights: --cfg-options load_from=<converted .pth>
#    (docs/pretrained.md);
#  * inputs normalised to [-1, 1] (mean = std = 127.5), as every model base;
#  * test settings of docs/method.md#evaluation: class-wise NMS at IoU 0.3, at most 400
#    detections per patch, scores down to 0.05 kept;
#  * one class (the experiment's parent config sets the dataset's num_classes).
model = dict(
    type='ATSS',
    data_preprocessor=dict(
        type='DetDataPreprocessor',
        mean=[127.5, 127.5, 127.5],
        std=[127.5, 127.5, 127.5],
        bgr_to_rgb=True,
        pad_size_divisor=32),
    backbone=dict(
        type='ResNet',
        depth=50,
        num_stages=4,
        out_indices=(0, 1, 2, 3),
        frozen_stages=-1,
        norm_cfg=dict(type='BN', requires_grad=True),
        norm_eval=False,
        style='pytorch',
        init_cfg=None),
    neck=dict(
        type='FPN',
        in_channels=[256, 512, 1024, 2048],
        out_channels=256,
        start_level=0,
        add_extra_convs='on_output',
        num_outs=5),
    bbox_head=dict(
        type='ATSSHead',
        num_classes=1,
        in_channels=256,
        stacked_convs=4,
        feat_channels=256,
        anchor_generator=dict(
            type='AnchorGenerator',
            ratios=[1.0],
            octave_base_scale=4,
            scales_per_octave=1,
            strides=[4, 8, 16, 32, 64]),
        bbox_coder=dict(
            type='DeltaXYWHBBoxCoder',
            target_means=[0.0, 0.0, 0.0, 0.0],
            target_stds=[0.1, 0.1, 0.2, 0.2]),
        loss_cls=dict(
            type='FocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25, loss_weight=1.0),
        loss_bbox=dict(type='GIoULoss', loss_weight=2.0),
        loss_centerness=dict(
            type='CrossEntropyLoss', use_sigmoid=True, loss_weight=1.0)),
    train_cfg=dict(
        assigner=dict(type='ATSSAssigner', topk=9),
        allowed_border=-1,
        pos_weight=-1,
        debug=False),
    test_cfg=dict(
        nms_pre=1000,
        min_bbox_size=0,
        # no score floor: as faster-rcnn_r50_fpn.py (docs/method.md#evaluation)
        score_thr=0.0,
        nms=dict(type='nms', iou_threshold=0.3),
        max_per_img=400))
