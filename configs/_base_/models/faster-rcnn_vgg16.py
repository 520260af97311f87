# Faster R-CNN with VGG16 (Ren et al. 2015), the paper's detector (Section 2.3).
# No FPN: one feature map, conv5_3 at stride 16 (512 channels).
#
# Anchors: scales 1 and 2 at stride 16, ratio 1:1, i.e. 16 and 32 px squares. Cells are
# 12 px (CRCHisto) to 32 px (MITOS, TUPAC) boxes; Faster R-CNN's default 128-512 px
# anchors would overlap none of them with IoU > 0.3. With stride 16 a 12 px cell can lie
# 8 px from the nearest anchor centre, where its best anchor has IoU ~0.14, so the RPN
# assigner makes each cell's best anchor positive down to IoU 0.1 (Faster R-CNN's rule
# "the anchor with the highest IoU is positive"), keeping the 0.7 / 0.3 thresholds of
# Section 2.3 for all other anchors.
#
# Box head: RoIAlign 7x7 then two shared fc layers of 4096 (VGG16's fc6 / fc7), as in
# Ren et al., so the ImageNet fc6 / fc7 weights can initialise them
# (tools/convert_torchvision_ckpt.py, docs/pretrained.md).
#
# Random init by default. ImageNet weights come from a local file, set in one place on
# the command line: --cfg-options load_from=<converted .pth> (docs/pretrained.md).
model = dict(
    type='FasterRCNN',
    data_preprocessor=dict(
        type='DetDataPreprocessor',
        # inputs normalised to [-1, 1] (Section 2.3)
        mean=[127.5, 127.5, 127.5],
        std=[127.5, 127.5, 127.5],
        bgr_to_rgb=True,
        pad_size_divisor=16),
    backbone=dict(type='VGG16', frozen_stages=0),
    rpn_head=dict(
        type='RPNHead',
        in_channels=512,
        feat_channels=512,
        anchor_generator=dict(
            type='AnchorGenerator',
            scales=[1, 2],
            ratios=[1.0],
            strides=[16]),
        bbox_coder=dict(
            type='DeltaXYWHBBoxCoder',
            target_means=[0.0, 0.0, 0.0, 0.0],
            target_stds=[1.0, 1.0, 1.0, 1.0]),
        loss_cls=dict(
            type='CrossEntropyLoss', use_sigmoid=True, loss_weight=1.0),
        loss_bbox=dict(type='L1Loss', loss_weight=1.0)),
    roi_head=dict(
        type='StandardRoIHead',
        bbox_roi_extractor=dict(
            type='SingleRoIExtractor',
            roi_layer=dict(type='RoIAlign', output_size=7, sampling_ratio=0),
            out_channels=512,
            featmap_strides=[16]),
        bbox_head=dict(
            type='Shared2FCBBoxHead',
            in_channels=512,
            fc_out_channels=4096,
            roi_feat_size=7,
            num_classes=1,
            bbox_coder=dict(
                type='DeltaXYWHBBoxCoder',
                target_means=[0.0, 0.0, 0.0, 0.0],
                target_stds=[0.1, 0.1, 0.2, 0.2]),
            reg_class_agnostic=False,
            loss_cls=dict(
                type='CrossEntropyLoss', use_sigmoid=False, loss_weight=1.0),
            loss_bbox=dict(type='L1Loss', loss_weight=1.0))),
    train_cfg=dict(
        rpn=dict(
            # Section 2.3: IoU > 0.7 positive, < 0.3 unlabeled, in between ignored
            assigner=dict(
                type='MaxIoUAssigner',
                pos_iou_thr=0.7,
                neg_iou_thr=0.3,
                min_pos_iou=0.1,
                match_low_quality=True,
                ignore_iof_thr=-1),
            sampler=dict(
                type='RandomSampler',
                num=256,
                pos_fraction=0.5,
                neg_pos_ub=-1,
                add_gt_as_proposals=False),
            allowed_border=-1,
            pos_weight=-1,
            debug=False),
        rpn_proposal=dict(
            nms_pre=2000,
            max_per_img=300,
            nms=dict(type='nms', iou_threshold=0.7),
            min_bbox_size=0),
        rcnn=dict(
            assigner=dict(
                type='MaxIoUAssigner',
                pos_iou_thr=0.5,
                neg_iou_thr=0.5,
                min_pos_iou=0.5,
                match_low_quality=False,
                ignore_iof_thr=-1),
            # 128 RoIs per image, a quarter positive at most (Ren et al.)
            sampler=dict(
                type='RandomSampler',
                num=128,
                pos_fraction=0.25,
                neg_pos_ub=-1,
                add_gt_as_proposals=True),
            pos_weight=-1,
            debug=False)),
    test_cfg=dict(
        rpn=dict(
            nms_pre=2000,
            max_per_img=300,
            nms=dict(type='nms', iou_threshold=0.7),
            min_bbox_size=0),
        # SPEC §6: class-wise NMS at IoU 0.3, at most 100 per patch; the metric applies
        # the 0.5 score threshold, lower scores are kept for precision-recall analysis.
        rcnn=dict(
            score_thr=0.05,
            nms=dict(type='nms', iou_threshold=0.3),
            max_per_img=100)))
