# MITOS-ATYPIA-14, random keep-1 deletion, VGG16: cross-entropy baseline (Section 3.2.1,
# Tables 1-3; Appendix B (pi) and C (repeated runs)).
_base_ = [
    '../_base_/models/faster-rcnn_vgg16.py',
    '../_base_/datasets/mitos14.py',
    '../_base_/deletion/keep1_random.py',
    '../_base_/methods/ce.py',
    '../_base_/schedules/adam_2580it.py',
    '../_base_/default_runtime.py',
]
model = dict(
    rpn_head=_base_.rpn_head,
    roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes, **_base_.bbox_head)))
train_dataloader = dict(dataset=dict(deletion=_base_.deletion))
val_dataloader = dict(dataset=dict(deletion=_base_.deletion))
