# Real fluorescence nuclei (mnfinder), random keep-1 deletion, slim RetinaNet on CPU: the
# background recalibration loss (BRL; Zhang et al. 2020), the peer baseline
# (docs/method.md#competing-methods), at the synthetic config's settings.
_base_ = './mnfinder_retinanet_keep1_ce.py'
model = dict(bbox_head=dict(loss_cls=dict(
    _delete_=True, type='BackgroundRecalibrationLoss', use_sigmoid=True, gamma=2.0,
    alpha=0.25, confusion_thr=0.25, loss_weight=1.0)))
