# NuCLS (tumor / lymphocyte / stromal), at most ten annotations per class and image,
# RetinaNet ResNet-50 FPN: the detector's own loss (focal loss), the baseline. The
# parent of every NuCLS (tumor / lymphocyte / stromal) x RetinaNet ResNet-50 FPN
# experiment.
_base_ = [
    '../_base_/models/retinanet_r50_fpn.py',
    '../_base_/datasets/nucls.py',
    '../_base_/deletion/cap10_per_class.py',
    '../_base_/schedules/adam_2580it.py',
    '../_base_/default_runtime.py',
]
# one cap per class: the base's detections per patch times the number of classes
model = dict(
    bbox_head=dict(num_classes=_base_.num_classes),
    test_cfg=dict(max_per_img=_base_.model.test_cfg.max_per_img * _base_.num_classes))
