# Your own data, any one class (data_prep/prepare.py qupath / masks --out data/custom,
# configs/_base_/datasets/custom.py): the configuration the own-data workflow
# (tools/fit_prior.py) was measured with on real nuclei (docs/experiments.md,
# "The own-data workflow on real nuclei"): slim ResNet-18 FPN Faster R-CNN, binary PU
# with a prior per stage, 300 iterations of batch 4 on a CPU.
# * deletion none: your annotations are already incomplete; deleting more would only
#   waste labels (deletion is for the benchmark configs).
# * pi: 0.006 (RPN) and 0.25 (RoI head) are a start; tools/fit_prior.py fits them.
# * several classes: configs/custom/custom_mpu.py.
# * more data or a GPU: --cfg-options train_cfg.max_iters=1200 train_cfg.val_interval=1200
_base_ = [
    '../_base_/models/faster-rcnn_r18-slim_fpn.py',
    '../_base_/datasets/custom.py',
    '../_base_/deletion/none.py',
    '../_base_/schedules/cpu_short.py',
    '../_base_/default_runtime.py',
]
model = dict(
    rpn_head=dict(
        type='PURPNHead',
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.006, use_sigmoid=True,
                      loss_weight=1.0)),
    roi_head=dict(bbox_head=dict(
        num_classes=_base_.num_classes,
        loss_cls=dict(_delete_=True, type='PULoss', prior=0.25, use_sigmoid=False,
                      loss_weight=1.0))))
