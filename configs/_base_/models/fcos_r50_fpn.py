# FCOS with ResNet-50 FPN (docs/method.md#dense-detectors): mmdet 3.3.0's model of
# fcos/fcos_r50-caffe_fpn_gn-head-center-normbbox-centeronreg-giou_1x_coco.py (focal
# loss, GIoU box loss, centerness on the regression branch, GroupNorm head, centre
# sampling within 1.5 strides) except:
#  * box distances as FCOS's exp(scale * x) in pixels (norm_on_bbox=False), not the
#    clamped stride-normalised ones: from random init the clamp (a ReLU) can turn every
#    distance to zero within ten Adam steps and keep it there (no gradient), as one of
#    three seeds did on real nuclei (GIoU loss 1.000 throughout, no detection);
#  * FPN levels P2-P6 (start_level=0, strides 4-64) instead of P3-P7 (8-128), and
#    regress ranges a quarter of mmdet's (a location regresses at the level whose range
#    holds its largest distance to a box side: up to 16 px at stride 4, 16-32 px at
#    stride 8, ...). A 12-40 px cell is then learned at strides 4-8 by the 5-20
#    locations within 1.5 strides of its centre; with mmdet's levels a 12 px cell falls
#    to stride 8 and its (-1, 64) range, one to four locations;
#  * the pytorch-style ResNet with random init and trainable BN statistics
#    (norm_eval=False, nothing frozen), as the other model bases; ImageNet weights:
#    --cfg-options load_from=<converted .pth> (docs/pretrained.md);
#  * inputs normalised to [-1, 1] (mean = std = 127.5), as every model base;
#  * test settings of docs/method.md#evaluation: class-wise NMS at IoU 0.3, at most 400
#    detections per patch, scores down to 0.05 kept;
#  * one class (the experiment's parent config sets the dataset's num_classes).
model = dict(
    type='FCOS',
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
        relu_before_extra_convs=True,
        num_outs=5),
    bbox_head=dict(
        type='FCOSHead',
        num_classes=1,
        in_channels=256,
        stacked_convs=4,
        feat_channels=256,
        strides=[4, 8, 16, 32, 64],
        regress_ranges=((-1, 16), (16, 32), (32, 64), (64, 128), (128, 1e8)),
        center_sampling=True,
        center_sample_radius=1.5,
        norm_on_bbox=False,
        centerness_on_reg=True,
        conv_bias=True,
        loss_cls=dict(
            type='FocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25, loss_weight=1.0),
        loss_bbox=dict(type='GIoULoss', loss_weight=1.0),
        loss_centerness=dict(
            type='CrossEntropyLoss', use_sigmoid=True, loss_weight=1.0)),
    train_cfg=dict(allowed_border=-1, pos_weight=-1, debug=False),
    test_cfg=dict(
        nms_pre=1000,
        min_bbox_size=0,
        # no score floor: as faster-rcnn_r50_fpn.py (docs/method.md#evaluation)
        score_thr=0.0,
        nms=dict(type='nms', iou_threshold=0.3),
        max_per_img=400))
