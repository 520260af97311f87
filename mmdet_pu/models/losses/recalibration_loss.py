"""Background recalibration loss (BRL), the peer baseline for one-stage detectors under
missing annotations (Zhang et al., ICASSP 2020), reconstructed from its paper.

Not a PU risk: a heuristic on top of the focal loss that the PU heads are compared with
(docs/method.md#competing-methods).
"""
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from mmdet.models.losses.utils import weight_reduce_loss
from mmdet.registry import MODELS


def recalibrated_focal_terms(cls_score: Tensor, labels: Tensor, gamma: float = 2.0,
                             alpha: float = 0.25, confusion_thr: float = 0.25) -> Tensor:
    r"""Per-channel BRL terms of a sigmoid head, ``(N, C)``.

    With p = sigmoid(x) and p_t the probability of the channel's target (p for the
    label's channel, 1 - p for the others), the focal loss (Lin et al. 2017) is
    FL = -alpha_t (1 - p_t)^gamma log p_t, alpha_t = alpha for the label's channel and
    1 - alpha for the others. BRL replaces the negative branch, where the detector is
    confident that a background channel is an object (p_t < ``confusion_thr``, an
    unannotated object more likely than a background), by the mirror of the positive
    branch:

    .. math::

        \ell(x) = -(1 - \alpha)\, p_t^\gamma \log(1 - p_t)
                = -(1 - \alpha)\, (1 - p)^\gamma \log p,

    which pushes that channel towards the object instead of away from it. Positive
    channels keep the focal loss. ``confusion_thr = 0`` is mmdet's ``FocalLoss``.

    Args:
        cls_score (Tensor): ``(N, C)`` logits.
        labels (Tensor): ``(N,)`` labels in ``[0, C]``, ``C`` the background.
        gamma (float): Focusing parameter.
        alpha (float): Weight of the positive channel.
        confusion_thr (float): p_t below which a background channel is recalibrated.

    Returns:
        Tensor: ``(N, C)`` losses, from log-sigmoids (finite for any logit).
    """
    num_classes = cls_score.size(1)
    target = F.one_hot(labels, num_classes + 1)[:, :num_classes].bool()
    signed = torch.where(target, cls_score, -cls_score)  # p_t = sigmoid(signed)
    log_pt, log_not_pt = F.logsigmoid(signed), F.logsigmoid(-signed)
    alpha_t = torch.where(target, torch.full_like(cls_score, alpha),
                          torch.full_like(cls_score, 1 - alpha))
    focal = alpha_t * torch.exp(gamma * log_not_pt) * -log_pt
    mirror = alpha_t * torch.exp(gamma * log_pt) * -log_not_pt
    confused = ~target & (log_pt.exp() < confusion_thr)
    return torch.where(confused, mirror, focal)


@MODELS.register_module()
class BackgroundRecalibrationLoss(nn.Module):
    """BRL (:func:`recalibrated_focal_terms`) as ``loss_cls`` of a sigmoid dense head
    (RetinaNet), called like mmdet's ``FocalLoss``.

    Args:
        use_sigmoid (bool): Must be True (a sigmoid head).
        gamma (float): Focusing parameter. Default 2.0.
        alpha (float): Weight of the positive channel. Default 0.25.
        confusion_thr (float): p_t below which a background channel is recalibrated,
            in [0, 1). Default 0.25 (an object score above 0.75).
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
        loss_weight (float): Weight of the loss.
    """

    def __init__(self, use_sigmoid: bool = True, gamma: float = 2.0, alpha: float = 0.25,
                 confusion_thr: float = 0.25, reduction: str = 'mean',
                 loss_weight: float = 1.0) -> None:
        super().__init__()
        if not use_sigmoid:
            raise ValueError('BackgroundRecalibrationLoss: use_sigmoid must be True '
                             '(a sigmoid head with one logit per class)')
        self.use_sigmoid = use_sigmoid
        if not 0 <= confusion_thr < 1:
            raise ValueError(f'BackgroundRecalibrationLoss: confusion_thr must be in '
                             f'[0, 1), got {confusion_thr}')
        self.confusion_thr = confusion_thr
        self.gamma, self.alpha = gamma, alpha
        self.reduction, self.loss_weight = reduction, loss_weight

    def forward(self, pred: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                avg_factor: Optional[float] = None,
                reduction_override: Optional[str] = None) -> Tensor:
        """Loss of logits ``pred`` ``(N, C)`` for labels ``target`` ``(N,)`` (``C``:
        background), ``weight`` ``(N,)`` or ``(N, C)``, averaged over ``avg_factor``."""
        reduction = reduction_override or self.reduction
        loss = recalibrated_focal_terms(pred, target, self.gamma, self.alpha,
                                        self.confusion_thr)
        if weight is not None and weight.dim() == 1:
            weight = weight[:, None]
        return self.loss_weight * weight_reduce_loss(loss, weight, reduction, avg_factor)
