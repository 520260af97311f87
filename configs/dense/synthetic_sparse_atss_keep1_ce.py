# Synthetic regime "sparse" (2-5 mitosis-like cells per 256 px tile among look-alikes),
# random keep-1 deletion, slim ATSS on CPU: the detector's own loss (focal loss), the
# baseline. The parent of the regime's ATSS experiments (prepare the data: see the
# dataset base).
_base_ = [
    '../_base_/models/atss_r18-slim_fpn.py',
    '../_base_/datasets/synthetic_sparse.py',
    '../_base_/deletion/keep1_random.py',
    '../_base_/schedules/cpu_short.py',
    '../_base_/default_runtime.py',
]
model = dict(bbox_head=dict(num_classes=_base_.num_classes))
