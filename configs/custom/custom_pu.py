# Your own data (data_prep/prepare.py qupath, configs/_base_/datasets/custom.py), one cell
# class: slim ResNet-18 FPN Faster R-CNN with binary PU learning.
# * deletion none: the annotations are already incomplete (a pathologist marked some
#   cells per region); deleting more would only waste labels.
# * the paper's schedule (Adam 1e-3, 2580 iterations of batch 8): real data needs more
#   than the 300-iteration CPU smoke schedule; ~0.6 s per step on 2 CPU cores with the
#   slim model (about half an hour), minutes on a GPU (--cfg-options
#   train_cfg.max_iters=300 for a quick look).
# * pi: methods/pu.py's 0.035 (sparse mitoses) is only a start; choose it for your cells
#   on the validation split with tools/sweep_prior.py (README, "Choosing pi").
_base_ = [
    '../_base_/models/faster-rcnn_r18-slim_fpn.py',
    '../_base_/datasets/custom.py',
    '../_base_/deletion/none.py',
    '../_base_/methods/pu.py',
    '../_base_/schedules/adam_2580it.py',
    '../_base_/default_runtime.py',
]
model = dict(
    rpn_head=_base_.rpn_head,
    roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes, **_base_.bbox_head)))
train_dataloader = dict(dataset=dict(deletion=_base_.deletion))
val_dataloader = dict(dataset=dict(deletion=_base_.deletion))
