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
_base_ = './faster-rcnn_r50_fpn.py'
model = dict(
    data_preprocessor=dict(pad_size_divisor=16),
    backbone=dict(_delete_=True, type='VGG16', frozen_stages=0),
    neck=None,
    rpn_head=dict(
        in_channels=512,
        feat_channels=512,
        anchor_generator=dict(scales=[1, 2], strides=[16])),
    roi_head=dict(
        bbox_roi_extractor=dict(out_channels=512, featmap_strides=[16]),
        # two shared fc of 4096 = VGG16's fc6 / fc7
        bbox_head=dict(in_channels=512, fc_out_channels=4096)),
    train_cfg=dict(
        # each cell's best anchor is positive down to IoU 0.1 (see above)
        rpn=dict(assigner=dict(min_pos_iou=0.1)),
        # 300 proposals; 128 RoIs per image, a quarter positive at most (Ren et al.)
        rpn_proposal=dict(max_per_img=300),
        rcnn=dict(sampler=dict(num=128))),
    test_cfg=dict(rpn=dict(nms_pre=2000, max_per_img=1000)))
