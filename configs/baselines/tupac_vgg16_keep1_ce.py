# TUPAC16 (cases 01-23), one original label kept per patch, VGG16: cross-entropy
# baseline (Section 3.4, Table 10). The parent of every TUPAC16 experiment.
_base_ = [
    '../_base_/models/faster-rcnn_vgg16.py',
    '../_base_/datasets/tupac.py',
    '../_base_/deletion/tupac_original_keep1.py',
    '../_base_/schedules/adam_2580it.py',
    '../_base_/default_runtime.py',
]
model = dict(roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes)))
