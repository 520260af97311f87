# Real fluorescence nuclei (mnfinder), random keep-1 deletion, slim FCOS on CPU: the
# detector's own loss, the baseline. The parent of every mnfinder slim FCOS experiment
# (prepare the data: see the dataset base).
_base_ = [
    '../_base_/models/fcos_r18-slim_fpn.py',
    '../_base_/datasets/mnfinder.py',
    '../_base_/deletion/keep1_random.py',
    '../_base_/schedules/cpu_short.py',
    '../_base_/default_runtime.py',
]
model = dict(bbox_head=dict(num_classes=_base_.num_classes))
