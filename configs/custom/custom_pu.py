# Your own data (data_prep/prepare.py qupath, configs/_base_/datasets/custom.py), one cell
# class: slim ResNet-18 FPN Faster R-CNN with binary PU learning.
# * deletion none: the annotations are already incomplete (a pathologist marked some
#   cells per region); deleting more would only waste labels.
# * the paper's schedule (Adam 1e-3, 2580 iterations of batch 8): real data needs more
#   than the 300-iteration CPU smoke schedule (--cfg-options train_cfg.max_iters=300 for
#   a quick look).
# * pi: 0.035 (sparse mitoses) is only a start; choose it for your cells with the
#   README's "Choosing pi".
_base_ = [
    '../_base_/models/faster-rcnn_r18-slim_fpn.py',
    '../_base_/datasets/custom.py',
    '../_base_/deletion/none.py',
    '../_base_/schedules/adam_2580it.py',
    '../_base_/default_runtime.py',
]
model = dict(
    rpn_head=dict(
        type='PURPNHead',
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.035, use_sigmoid=True,
                      loss_weight=1.0)),
    roi_head=dict(bbox_head=dict(
        num_classes=_base_.num_classes,
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.035, use_sigmoid=False,
                      loss_weight=1.0))))
