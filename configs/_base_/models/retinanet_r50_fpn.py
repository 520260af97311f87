# RetinaNet with ResNet-50 FPN (docs/method.md#dense-detectors): mmdet 3.3.0's model of
# retinanet/retinanet_r50_fpn_1x_coco.py (focal loss, L1 box loss, MaxIoUAssigner at
# 0.5 / 0.4, four stacked convs, nine anchors per location) except:
#  * FPN levels P2-P6 (start_level=0, strides 4-64) instead of P3-P7 (8-128), with
#    mmdet's anchors of 4 x stride (three scales per octave, three ratios): 16-25 px at
#    stride 4, 32-50 px at stride 8. A 12 px cell then lies inside a 16 px anchor (IoU
#    0.56) and a 40 px cell meets a 40 px anchor at IoU >= 0.68, above the 0.5 positive
#    threshold; mmdet's smallest anchor (32 px at stride 8) meets a 12 px cell at IoU
#    0.14, below the 0.4 negative threshold, leaving only its low-quality match;
#  * random init with trainable BN statistics (norm_eval=False, nothing frozen), as the
#    Faster R-CNN bases; ImageNet weights: --cfg-options load_from=<converted .pth>
#    (docs/pretrained.md);
#  * inputs normalised to [-1, 1] (mean = std = 127.5), as every model base;
#  * test settings of docs/method.md#evaluation: class-wise NMS at IoU 0.3, at most 400
#    detections per patch, scores down to 0.05 kept;
#  * one class (the experiment's parent config sets the dataset's num_classes).
model = dict(
    type='RetinaNet',
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
        add_extra_convs='on_input',
        num_outs=5),
    bbox_head=dict(
        type='RetinaHead',
        num_classes=1,
        in_channels=256,
        stacked_convs=4,
        feat_channels=256,
        anchor_generator=dict(
            type='AnchorGenerator',
            octave_base_scale=4,
            scales_per_octave=3,
            ratios=[0.5, 1.0, 2.0],
            strides=[4, 8, 16, 32, 64]),
        bbox_coder=dict(
            type='DeltaXYWHBBoxCoder',
            target_means=[0.0, 0.0, 0.0, 0.0],
            target_stds=[1.0, 1.0, 1.0, 1.0]),
        loss_cls=dict(
            type='FocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25, loss_weight=1.0),
        loss_bbox=dict(type='L1Loss', loss_weight=1.0)),
    train_cfg=dict(
        assigner=dict(
            type='MaxIoUAssigner',
            pos_iou_thr=0.5,
            neg_iou_thr=0.4,
            min_pos_iou=0,
            ignore_iof_thr=-1),
        sampler=dict(type='PseudoSampler'),
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
