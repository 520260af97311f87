"""Softmax cross entropy for multi-class training data in which some cells have no class
(docs/method.md#cells-of-unknown-class)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from mmdet.models.losses import accuracy
from mmdet.models.losses.utils import weight_reduce_loss
from mmdet.registry import MODELS


@MODELS.register_module()
class UnknownClassCELoss(nn.Module):
    r"""Softmax cross entropy over C classes and the background in which a sample may
    be a cell of no known class (label ``C + 1``; a pseudo-label file gives such cells
    the class -1, :func:`~mmdet_pu.datasets.cell_coco.unknown_class_label`).

    With p the softmax of the ``C + 1`` logits (background last),

    .. math::

        H(c, y) = \begin{cases}
            -\log p_y & y \le C \text{ (a class, or the background)} \\
            -\log (1 - p_{bg}) = -\log \sum_{m < C} p_m & y = C + 1
        \end{cases}

    The second case is the likelihood of "a cell, of any class": it teaches the cell
    against the background and leaves its share among the classes to the labeled cells.
    Since ``p_m = (1 - p_bg) p(m | cell)``, the cross entropy of a labeled cell is the
    same term plus ``-log p(m | cell)``, so both kinds of cell teach the detector alike
    and only the classified ones teach the classes. Reduced like mmdet's
    ``CrossEntropyLoss`` (label weights, ``avg_factor``); predictions are the plain
    softmax's. Config key: ``model.roi_head.bbox_head.loss_cls``.

    Args:
        reduction (str): ``'none'``, ``'mean'`` or ``'sum'``.
        loss_weight (float): Weight of the loss.
        use_sigmoid (bool): Must be False; accepted so that the loss can replace the
            type of mmdet's ``CrossEntropyLoss`` dicts.
    """

    # read by mmdet's BBoxHead: C + 1 channels, its softmax, and an accuracy that
    # counts a cell of unknown class right when it is not called background
    custom_cls_channels = True
    custom_activation = True
    custom_accuracy = True

    def __init__(self, reduction: str = 'mean', loss_weight: float = 1.0,
                 use_sigmoid: bool = False) -> None:
        super().__init__()
        if use_sigmoid:
            raise ValueError('loss_cls.use_sigmoid: UnknownClassCELoss is a softmax loss '
                             'over the classes and the background, got use_sigmoid=True')
        self.use_sigmoid = False
        self.reduction = reduction
        self.loss_weight = loss_weight

    def get_cls_channels(self, num_classes: int) -> int:
        """The classes and the background."""
        return num_classes + 1

    def get_activation(self, cls_score: Tensor) -> Tensor:
        """Class probabilities, the softmax an mmdet ``BBoxHead`` applies for CE."""
        return F.softmax(cls_score, dim=-1)

    def get_accuracy(self, cls_score: Tensor, labels: Tensor) -> dict:
        """mmdet's accuracy, a cell of unknown class counted right where the arg-max is
        any class."""
        background = cls_score.size(1) - 1
        predicted = cls_score.argmax(dim=1)
        unknown = labels == background + 1
        labels = torch.where(unknown & (predicted < background), predicted, labels)
        return dict(acc=accuracy(cls_score, labels))

    def forward(self,
                cls_score: Tensor,
                label: Tensor,
                weight: Tensor = None,
                avg_factor: float = None,
                reduction_override: str = None) -> Tensor:
        """The loss of ``(N, C + 1)`` logits at ``(N,)`` labels in ``[0, C + 1]``.

        Raises:
            ValueError: a label outside ``[0, C + 1]``.
        """
        reduction = reduction_override if reduction_override else self.reduction
        background = cls_score.size(1) - 1
        label = label.reshape(-1)
        if label.numel() and not 0 <= int(label.min()) <= int(label.max()) <= background + 1:
            raise ValueError(
                f'UnknownClassCELoss: expected labels in [0, {background + 1}] (a class, '
                f'{background} for the background, {background + 1} for a cell of unknown '
                f'class), got labels from {int(label.min())} to {int(label.max())}')
        log_prob = F.log_softmax(cls_score.float(), dim=1)
        known = log_prob.gather(1, label.clamp(max=background)[:, None]).squeeze(1)
        any_class = torch.logsumexp(log_prob[:, :background], dim=1)
        loss = -torch.where(label == background + 1, any_class, known)
        if weight is not None:
            weight = weight.float()
        return self.loss_weight * weight_reduce_loss(loss, weight, reduction, avg_factor)
