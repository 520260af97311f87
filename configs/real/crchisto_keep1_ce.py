# CRCHistoPhenotypes nuclei (the paper's Tables 7-9 on CPU), random keep-1 deletion (one
# annotated nucleus per 250 px tile, ~2 % of them), slim ResNet-18 FPN Faster R-CNN from
# random init instead of the paper's ImageNet VGG16: cross-entropy baseline. The parent
# of every binary CRCHistoPhenotypes CPU experiment (prepare: see the dataset base).
_base_ = [
    '../_base_/models/faster-rcnn_r18-slim_fpn.py',
    '../_base_/datasets/crchisto.py',
    '../_base_/deletion/keep1_random.py',
    '../_base_/schedules/cpu_short.py',
    '../_base_/default_runtime.py',
]
# four 250 px tiles a batch on CPU (the paper's eight: Section 2.3), as mnfinder's
train_dataloader = dict(batch_size=4)
model = dict(roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes)))
