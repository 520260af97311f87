"""FCOS head for the PU risk (docs/method.md#dense-detectors)."""
from mmdet.models.dense_heads import FCOSHead
from mmdet.registry import MODELS

from .batch_cls_loss import BatchClsLossMixin


@MODELS.register_module()
class PUFCOSHead(BatchClsLossMixin, FCOSHead):
    """``FCOSHead`` with the PU heads' guarantees.

    ``FCOSHead.loss_by_feat`` already flattens every level and image into one
    ``loss_cls`` call, so the losses equal ``FCOSHead``'s for any loss. The class
    exists so that every dense PU detector is configured alike: it fills in
    ``use_sigmoid=True`` for ``FocalPULoss``, checks its priors against
    ``num_classes`` when built, and keeps the one-call guarantee should mmdet's head
    change (:class:`BatchClsLossMixin`). Config::

        bbox_head=dict(type='PUFCOSHead',
                       loss_cls=dict(type='FocalPULoss', prior=0.005))
    """
