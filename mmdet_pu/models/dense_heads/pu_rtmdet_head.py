"""RTMDet heads with one classification-loss call per mini-batch
(docs/method.md#dense-detectors)."""
from mmdet.models.dense_heads import RTMDetHead, RTMDetSepBNHead
from mmdet.registry import MODELS
from mmdet.utils import reduce_mean

from .batch_cls_loss import BatchClsLossMixin


class RTMDetBatchClsLossMixin(BatchClsLossMixin):
    """:class:`BatchClsLossMixin` for RTMDet's normaliser.

    ``RTMDetHead`` calls ``loss_cls`` per level with ``avg_factor=1`` and divides the
    results afterwards by the sum of the soft targets (assign metrics) of the batch,
    averaged over GPUs and at least 1; the pooled call passes that sum as
    ``avg_factor``, so ``QualityFocalLoss`` gives ``RTMDetHead``'s value.
    """

    def batch_avg_factor(self, avg_factor, target):
        _, assign_metrics = target
        return avg_factor * reduce_mean(assign_metrics.sum()).clamp_(min=1).item()


@MODELS.register_module()
class PURTMDetHead(RTMDetBatchClsLossMixin, RTMDetHead):
    """``RTMDetHead`` whose ``loss_cls`` sees all FPN levels and images at once.

    For ``QualityFocalPULoss`` (the soft targets are RTMDet's assign metrics); with
    ``QualityFocalLoss`` its losses equal ``RTMDetHead``'s. Config::

        bbox_head=dict(type='PURTMDetHead',
                       loss_cls=dict(type='QualityFocalPULoss', prior=0.005))
    """


@MODELS.register_module()
class PURTMDetSepBNHead(RTMDetBatchClsLossMixin, RTMDetSepBNHead):
    """``RTMDetSepBNHead`` (mmdet's RTMDet configs) with one ``loss_cls`` call per
    mini-batch, as :class:`PURTMDetHead`. Config::

        bbox_head=dict(type='PURTMDetSepBNHead',
                       loss_cls=dict(type='QualityFocalPULoss', prior=0.005))
    """
