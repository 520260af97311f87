# RTMDet-s (docs/method.md#dense-detectors): mmdet 3.3.0's model of
# rtmdet/rtmdet_s_8xb32-300e_coco.py (CSPNeXt-s backbone and PAFPN, separate-BN shared
# head, quality focal loss, GIoU box loss, DynamicSoftLabelAssigner with 13 candidates)
# except:
#  * nothing for the cell sizes: the strides stay 8-32, because the assigner's
#    candidates are the points inside a cell and every box more than 8 px on each side
#    contains a stride-8 point (a 12-40 px cell one to 25). The backbone stays CSPNeXt,
#    not ResNet-50: RTMDet is that backbone, neck and head designed and tuned together,
#    and mmdet has no ResNet RTMDet;
#  * BN instead of SyncBN (one process; several GPUs: --cfg-options sync_bn=torch);
#  * random init; ImageNet weights: --cfg-options load_from=<cspnext-s_imagenet_600e.pth>
#    (its tensors are already named backbone.*);
#  * inputs normalised to [-1, 1] (mean = std = 127.5) in RGB, as every model base, and
#    padded to a multiple of 32, which mmdet's pipelines do with their fixed 640 px pad
#    (the PAFPN concatenates upsampled levels, so each side must divide by the largest
#    stride: our test tiles are 250 or 500 px);
#  * test settings of docs/method.md#evaluation: class-wise NMS at IoU 0.3, at most 400
#    detections per patch, scores down to 0.05 kept (mmdet: 0.65, 300, 0.001);
#  * one class (the experiment's parent config sets the dataset's num_classes).
# The training recipe of mmdet's config (AdamW, 300 epochs, mosaic, mixup, EMA) is not
# part of the model: the schedules are the experiments' (configs/_base_/schedules/).
model = dict(
    type='RTMDet',
    data_preprocessor=dict(
        type='DetDataPreprocessor',
        mean=[127.5, 127.5, 127.5],
        std=[127.5, 127.5, 127.5],
        bgr_to_rgb=True,
        pad_size_divisor=32,
        batch_augments=None),
    backbone=dict(
        type='CSPNeXt',
        arch='P5',
        expand_ratio=0.5,
        deepen_factor=0.33,
        widen_factor=0.5,
        channel_attention=True,
        norm_cfg=dict(type='BN'),
        act_cfg=dict(type='SiLU', inplace=True),
        init_cfg=None),
    neck=dict(
        type='CSPNeXtPAFPN',
        in_channels=[128, 256, 512],
        out_channels=128,
        num_csp_blocks=1,
        expand_ratio=0.5,
        norm_cfg=dict(type='BN'),
        act_cfg=dict(type='SiLU', inplace=True)),
    bbox_head=dict(
        type='RTMDetSepBNHead',
        num_classes=1,
        in_channels=128,
        stacked_convs=2,
        feat_channels=128,
        anchor_generator=dict(
            type='MlvlPointGenerator', offset=0, strides=[8, 16, 32]),
        bbox_coder=dict(type='DistancePointBBoxCoder'),
        loss_cls=dict(
            type='QualityFocalLoss', use_sigmoid=True, beta=2.0, loss_weight=1.0),
        loss_bbox=dict(type='GIoULoss', loss_weight=2.0),
        with_objectness=False,
        exp_on_reg=False,
        share_conv=True,
        pred_kernel_size=1,
        norm_cfg=dict(type='BN'),
        act_cfg=dict(type='SiLU', inplace=True)),
    train_cfg=dict(
        assigner=dict(type='DynamicSoftLabelAssigner', topk=13),
        allowed_border=-1,
        pos_weight=-1,
        debug=False),
    test_cfg=dict(
        nms_pre=30000,
        min_bbox_size=0,
        # no score floor: as faster-rcnn_r50_fpn.py (docs/method.md#evaluation)
        score_thr=0.0,
        nms=dict(type='nms', iou_threshold=0.3),
        max_per_img=400))
