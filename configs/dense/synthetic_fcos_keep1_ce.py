# Synthetic binary cells (mitosis-like cells among unannotated look-alikes), random
# keep-1 deletion, slim FCOS on CPU: the detector's own loss (focal loss), the baseline.
# The parent of every binary synthetic FCOS experiment (prepare the data: see the
# dataset base).
_base_ = [
    '../_base_/models/fcos_r18-slim_fpn.py',
    '../_base_/datasets/synthetic_binary.py',
    '../_base_/deletion/keep1_random.py',
    '../_base_/schedules/cpu_short.py',
    '../_base_/default_runtime.py',
]
model = dict(bbox_head=dict(num_classes=_base_.num_classes))
