# Synthetic regime "sparse": sparse mitosis-like cells (2-5 per 256 px tile), random
# keep-1 deletion, slim model on CPU: cross-entropy baseline. The parent of the regime's
# experiments (docs/experiments.md, "A family of synthetic regimes").
_base_ = [
    '../_base_/models/faster-rcnn_r18-slim_fpn.py',
    '../_base_/datasets/synthetic_sparse.py',
    '../_base_/deletion/keep1_random.py',
    '../_base_/schedules/cpu_short.py',
    '../_base_/default_runtime.py',
]
model = dict(roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes)))
