# Real fluorescence nuclei (mnfinder), random keep-1 deletion (one annotated nucleus per
# 256 px training tile), slim ResNet-18 FPN Faster R-CNN on CPU: cross-entropy baseline.
# The parent of every mnfinder experiment (prepare the data: see the dataset base).
_base_ = [
    '../_base_/models/faster-rcnn_r18-slim_fpn.py',
    '../_base_/datasets/mnfinder.py',
    '../_base_/deletion/keep1_random.py',
    '../_base_/schedules/cpu_short.py',
    '../_base_/default_runtime.py',
]
model = dict(roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes)))
