# CRCHistoPhenotypes nuclei in four classes (epithelial / fibroblast / inflammatory /
# others), one annotated nucleus of each class per 250 px tile (the others deleted at
# random), slim ResNet-18 FPN Faster R-CNN on CPU: cross-entropy baseline. The parent of
# every multi-class CRCHistoPhenotypes experiment. Nuclei without a class are ignored
# regions: samples inside them (intersection over the sample >= 0.5) are neither cells nor
# background in both stages (docs/method.md#unclassified-nuclei).
_base_ = [
    '../_base_/models/faster-rcnn_r18-slim_fpn.py',
    '../_base_/datasets/crchisto_classes.py',
    '../_base_/deletion/keep1_per_class.py',
    '../_base_/schedules/cpu_short.py',
    '../_base_/default_runtime.py',
]
# four 250 px tiles a batch on CPU (the paper's eight: Section 2.3), as mnfinder's
train_dataloader = dict(batch_size=4)
model = dict(
    roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes)),
    # one cap per class: the base's detections per patch times the number of classes
    test_cfg=dict(rcnn=dict(
        max_per_img=_base_.model.test_cfg.rcnn.max_per_img * _base_.num_classes)),
    train_cfg=dict(rpn=dict(assigner=dict(ignore_iof_thr=0.5)),
                   rcnn=dict(assigner=dict(ignore_iof_thr=0.5))))
