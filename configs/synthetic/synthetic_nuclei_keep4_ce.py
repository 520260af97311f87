# Synthetic regime "nuclei": dense nuclei (35-55 per 256 px tile), four annotated per
# patch, slim model on CPU: cross-entropy baseline. The parent of the regime's
# experiments (docs/experiments.md, "A family of synthetic regimes").
_base_ = [
    '../_base_/models/faster-rcnn_r18-slim_fpn.py',
    '../_base_/datasets/synthetic_nuclei.py',
    '../_base_/deletion/keep4_random.py',
    '../_base_/schedules/cpu_short.py',
    '../_base_/default_runtime.py',
]
model = dict(roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes)))
