# CRCHistoPhenotypes, random keep-1 deletion, VGG16: cross-entropy baseline (Section
# 3.3, Tables 7-9). The parent of every CRCHistoPhenotypes experiment.
_base_ = [
    '../_base_/models/faster-rcnn_vgg16.py',
    '../_base_/datasets/crchisto.py',
    '../_base_/deletion/keep1_random.py',
    '../_base_/schedules/adam_2580it.py',
    '../_base_/default_runtime.py',
]
model = dict(roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes)))
