# TUPAC16 (cases 01-23), random keep-1 deletion, VGG16: cross-entropy baseline (Section
# 3.4, Table 10).
_base_ = [
    '../_base_/models/faster-rcnn_vgg16.py',
    '../_base_/datasets/tupac.py',
    '../_base_/deletion/tupac_original_keep1.py',
    '../_base_/methods/ce.py',
    '../_base_/schedules/adam_2580it.py',
    '../_base_/default_runtime.py',
]
model = dict(
    rpn_head=_base_.rpn_head,
    roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes, **_base_.bbox_head)))
train_dataloader = dict(dataset=dict(deletion=_base_.deletion))
val_dataloader = dict(dataset=dict(deletion=_base_.deletion))
