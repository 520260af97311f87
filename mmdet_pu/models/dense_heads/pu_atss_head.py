"""ATSS head with one classification-loss call per mini-batch
(docs/method.md#dense-detectors)."""
from mmdet.models.dense_heads import ATSSHead
from mmdet.registry import MODELS

from .batch_cls_loss import BatchClsLossMixin


@MODELS.register_module()
class PUATSSHead(BatchClsLossMixin, ATSSHead):
    """``ATSSHead`` whose ``loss_cls`` sees all FPN levels and images at once.

    For ``FocalPULoss`` (the PU risk is estimated once per mini-batch); with
    ``FocalLoss`` its losses equal ``ATSSHead``'s. Targets, the box and the centerness
    losses are ``ATSSHead``'s (:class:`BatchClsLossMixin`). Config::

        bbox_head=dict(type='PUATSSHead',
                       loss_cls=dict(type='FocalPULoss', prior=0.005))
    """
