# BDE (Li et al., MICCAI 2020; Section 3.1.5), a documented reconstruction (docs/method.md#bde-reconstruction, no
# official code): cross entropy in both stages, with the loss weight of every unlabeled
# anchor / RoI multiplied by its box density energy
#   E_i = mean_j ||c_i - c_j||_1 / max_{j,k} ||c_j - c_k||_1
# over the centres c of the boxes the stage regresses in the same image
# (mmdet_pu/models/losses/bde.py). Positives keep weight 1.
rpn_head = dict(
    type='BDERPNHead',
    loss_cls=dict(
        _delete_=True, type='CrossEntropyLoss', use_sigmoid=True, loss_weight=1.0))
bbox_head = dict(
    type='BDEShared2FCBBoxHead',
    loss_cls=dict(
        _delete_=True, type='CrossEntropyLoss', use_sigmoid=False, loss_weight=1.0))
custom_hooks = []
