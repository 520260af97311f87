"""GFL head with one classification-loss call per mini-batch
(docs/method.md#dense-detectors)."""
from mmdet.models.dense_heads import GFLHead
from mmdet.registry import MODELS

from .batch_cls_loss import BatchClsLossMixin


@MODELS.register_module()
class PUGFLHead(BatchClsLossMixin, GFLHead):
    """``GFLHead`` whose ``loss_cls`` sees all FPN levels and images at once.

    For ``QualityFocalPULoss`` (the PU risk is estimated once per mini-batch; its soft
    targets are GFL's IoU scores); with ``QualityFocalLoss`` its losses equal
    ``GFLHead``'s. Targets, the box and the DFL losses are ``GFLHead``'s
    (:class:`BatchClsLossMixin`). Config::

        bbox_head=dict(type='PUGFLHead',
                       loss_cls=dict(type='QualityFocalPULoss', prior=0.005))
    """
