# NuCLS (tumor / lymphocyte / stromal), at most ten annotations per class and image,
# VGG16: cross-entropy baseline (Section 3.5, Table 11). The parent of every NuCLS
# experiment.
_base_ = [
    '../_base_/models/faster-rcnn_vgg16.py',
    '../_base_/datasets/nucls.py',
    '../_base_/deletion/cap10_per_class.py',
    '../_base_/schedules/adam_2580it.py',
    '../_base_/default_runtime.py',
]
# one cap per class: the base's detections per patch times the number of classes
model = dict(
    roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes)),
    test_cfg=dict(rcnn=dict(
        max_per_img=_base_.model.test_cfg.rcnn.max_per_img * _base_.num_classes)))
