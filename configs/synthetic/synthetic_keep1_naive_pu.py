# Synthetic binary cells, random keep-1 deletion, slim model on CPU: naive PU
# approximation (E_x[H(c,0)] over the unlabeled samples only).
_base_ = [
    '../_base_/models/faster-rcnn_r18-slim_fpn.py',
    '../_base_/datasets/synthetic_binary.py',
    '../_base_/deletion/keep1_random.py',
    '../_base_/methods/naive_pu.py',
    '../_base_/schedules/cpu_short.py',
    '../_base_/default_runtime.py',
]
model = dict(
    rpn_head=_base_.rpn_head,
    roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes, **_base_.bbox_head)))
train_dataloader = dict(dataset=dict(deletion=_base_.deletion))
val_dataloader = dict(dataset=dict(deletion=_base_.deletion))
# pi for ~14 mitoses per 256 px tile, between MITOS (0.04) and CRCHisto (0.3) densities;
# select it on the validation set with tools/sweep_prior.py.
model['rpn_head']['loss_cls']['prior'] = 0.15
model['roi_head']['bbox_head']['loss_cls']['prior'] = 0.15
