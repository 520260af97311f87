# TUPAC16, random keep-1 deletion, RetinaNet ResNet-50 FPN: the background recalibration
# loss (BRL; Zhang et al. 2020), the peer baseline for one-stage detectors under missing
# annotations, reconstructed from its paper (docs/method.md#competing-methods): the
# focal loss, except that a background channel the detector scores above 1 -
# confusion_thr is pushed towards the object.
_base_ = './tupac_retinanet_r50_keep1_ce.py'
model = dict(bbox_head=dict(loss_cls=dict(
    _delete_=True, type='BackgroundRecalibrationLoss', use_sigmoid=True, gamma=2.0,
    alpha=0.25, confusion_thr=0.25, loss_weight=1.0)))
