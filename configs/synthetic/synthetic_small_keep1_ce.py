# Synthetic regime "small": small mitosis-like cells (12-16 px) among three times the
# look-alikes, random keep-1 deletion, slim model on CPU: cross-entropy baseline. The
# parent of the regime's experiments (docs/experiments.md, "A family of synthetic
# regimes").
_base_ = [
    '../_base_/models/faster-rcnn_r18-slim_fpn.py',
    '../_base_/datasets/synthetic_small.py',
    '../_base_/deletion/keep1_random.py',
    '../_base_/schedules/cpu_short.py',
    '../_base_/default_runtime.py',
]
model = dict(roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes)))
