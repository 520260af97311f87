# Baseline (Section 3.1.5): standard cross entropy in both stages; the unannotated regions
# are negatives. With deletion/none.py this is the upper bound (complete annotations).
rpn_head = dict(
    type='RPNHead',
    loss_cls=dict(
        _delete_=True, type='CrossEntropyLoss', use_sigmoid=True, loss_weight=1.0))
bbox_head = dict(
    type='Shared2FCBBoxHead',
    loss_cls=dict(
        _delete_=True, type='CrossEntropyLoss', use_sigmoid=False, loss_weight=1.0))
custom_hooks = []
