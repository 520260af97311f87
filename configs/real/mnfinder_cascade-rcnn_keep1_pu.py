# Real fluorescence nuclei (mnfinder), random keep-1 deletion, slim Cascade R-CNN on CPU:
# PU learning (PURPNHead + a PULoss per stage; docs/method.md#cascade-r-cnn) at the
# synthetic keep-1 config's priors as a start: tools/fit_prior.py fits them to the data.
_base_ = './mnfinder_cascade-rcnn_keep1_ce.py'
model = dict(
    rpn_head=dict(type='PURPNHead',
                  loss_cls=dict(type='PULoss', prior=0.00679)),
    roi_head=dict(bbox_head=[
        dict(head, loss_cls=dict(head['loss_cls'], type='PULoss', prior=stage))
        for head, stage in zip(
            _base_.model.roi_head.bbox_head,
            [0.37, 0.496, 0.521])]))
