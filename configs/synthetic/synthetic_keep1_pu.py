# Synthetic binary cells, random keep-1 deletion, slim model on CPU: PU learning.
_base_ = [
    '../_base_/models/faster-rcnn_r18-slim_fpn.py',
    '../_base_/datasets/synthetic_binary.py',
    '../_base_/deletion/keep1_random.py',
    '../_base_/methods/pu.py',
    '../_base_/schedules/cpu_short.py',
    '../_base_/default_runtime.py',
]
model = dict(
    rpn_head=_base_.rpn_head,
    roi_head=dict(bbox_head=dict(num_classes=_base_.num_classes, **_base_.bbox_head)))
train_dataloader = dict(dataset=dict(deletion=_base_.deletion))
val_dataloader = dict(dataset=dict(deletion=_base_.deletion))
# Per-stage priors (docs/experiments.md, "Per-stage priors"); naive PU uses the same
# values so that only the estimator of E_x[H(c,0)] differs.
# * RoI head, pi = 0.25: the best validation average recall of tools/sweep_prior.py
#   with the PU loss over 0.05-0.30 (docs/experiments.md, "Synthetic data").
# * RPN, pi = 0.006: the share of true cells among the anchors the RPN samples. Its
#   sampler draws unlabeled anchors at random over the whole image, where cells are
#   rare (measured with the complete labels: 0.63 % of the sampled anchors, nearly all
#   of them the labeled ones), while the RoIs concentrate on cells (25-29 %).
model['rpn_head']['loss_cls']['prior'] = 0.006
model['roi_head']['bbox_head']['loss_cls']['prior'] = 0.25
