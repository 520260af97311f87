"""RetinaNet head with one classification-loss call per mini-batch
(docs/method.md#dense-detectors)."""
from mmdet.models.dense_heads import RetinaHead
from mmdet.registry import MODELS

from .batch_cls_loss import BatchClsLossMixin


@MODELS.register_module()
class PURetinaHead(BatchClsLossMixin, RetinaHead):
    """``RetinaHead`` whose ``loss_cls`` sees all FPN levels and images at once.

    For ``FocalPULoss`` (the PU risk is estimated once per mini-batch); with
    ``FocalLoss`` its losses equal ``RetinaHead``'s. Targets, anchors and the box loss
    are ``RetinaHead``'s (:class:`BatchClsLossMixin`). Config::

        bbox_head=dict(type='PURetinaHead',
                       loss_cls=dict(type='FocalPULoss', prior=0.005))
    """
