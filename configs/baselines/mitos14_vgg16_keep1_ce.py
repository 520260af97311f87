# MITOS-ATYPIA-14, random keep-1 deletion, VGG16: cross-entropy baseline
# (Section 3.2.1, Tables 1-3; Appendix B (pi) and C (repeated runs)).
# The parent of every MITOS-ATYPIA-14 x VGG16 experiment.
_base_ = [
    '../_base_/models/faster-rcnn_vgg16.py',
    '../_base_/datasets/mitos14.py',
    '../_base_/deletion/keep1_random.py',
    '../_base_/schedules/adam_2580it.py',
    '../_base_/default_runtime.py',
]
model = dict(roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes)))
