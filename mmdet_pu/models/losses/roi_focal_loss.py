"""Sigmoid focal loss for two-stage RoI box heads (the focal-loss baseline, Appendix A)."""
import torch
from torch import Tensor

from mmdet.models.losses import FocalLoss, accuracy
from mmdet.registry import MODELS


@MODELS.register_module()
class RoIFocalLoss(FocalLoss):
    """``FocalLoss`` usable as ``loss_cls`` of an mmdet ``BBoxHead``.

    The paper's focal-loss baseline (Appendix A, Eq. A2) is, per class,

        H_focal(c, z) = -alpha z (1-c)^gamma log c - (1-alpha)(1-z) c^gamma log(1-c)

    with ``c`` the sigmoid probability, ``alpha = 0.25`` and ``gamma = 2``. mmdet's
    ``FocalLoss`` computes exactly that but is sigmoid-only, while ``BBoxHead`` by
    default predicts ``num_classes + 1`` logits and applies a softmax at test time.
    Like mmdet's ``*CustomLoss`` classes, this loss declares custom classifier
    channels, so the head predicts one logit per class (no background logit) and
    uses :meth:`get_activation` at test time: the per-class sigmoids plus a
    background column ``1 - max_m c_m`` (``multiclass_nms`` drops the last column;
    for one class the RoI is a cell when ``c > 0.5``).

    Arguments are ``FocalLoss``'s.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # read by BBoxHead (custom_cls_channels, custom_activation, custom_accuracy)
        self.custom_cls_channels = True
        self.custom_activation = True
        self.custom_accuracy = True

    def get_cls_channels(self, num_classes: int) -> int:
        """One sigmoid logit per class, no background logit."""
        return num_classes

    def get_activation(self, cls_score: Tensor) -> Tensor:
        """Scores ``(n, num_classes + 1)``: class sigmoids, then ``1 - max``."""
        scores = cls_score.sigmoid()
        background = 1 - scores.max(dim=1, keepdim=True).values
        return torch.cat([scores, background], dim=1)

    def get_accuracy(self, cls_score: Tensor, labels: Tensor) -> dict:
        """Accuracy of the arg-max over :meth:`get_activation` (background = last)."""
        return dict(acc=accuracy(self.get_activation(cls_score), labels))
