"""One classification-loss call per mini-batch for mmdet's dense heads
(docs/method.md#dense-detectors), and their box-fit negatives
(docs/method.md#box-fit-negatives)."""
import inspect
from typing import List, NamedTuple, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from mmdet.models.task_modules.prior_generators import AnchorGenerator
from mmdet.registry import MODELS
from mmdet.structures.bbox import bbox_overlaps, get_box_tensor

from ..box_fit import box_fit_rule, check_box_fit_args


class _LossCall(NamedTuple):
    cls_score: Tensor
    target: object
    weight: Optional[Tensor]
    avg_factor: object
    reduction_override: Optional[str]


class _LossCallRecorder(nn.Module):
    """Stands in for a head's ``loss_cls`` and records its calls (returns zeros)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: List[_LossCall] = []

    def forward(self, cls_score, target, weight=None, avg_factor=None,
                reduction_override=None):
        self.calls.append(
            _LossCall(cls_score, target, weight, avg_factor, reduction_override))
        return cls_score.new_zeros(())


def _concat(parts: list):
    """Concatenate tensors, or tuples of tensors element-wise, along dim 0."""
    if isinstance(parts[0], (tuple, list)):
        return tuple(torch.cat(items) for items in zip(*parts))
    return torch.cat(parts)


def _same_value(values: list, what: str):
    first = values[0]
    if any(value is not first and float(value) != float(first) for value in values):
        raise ValueError(
            f'cannot pool the per-level classification losses into one call: the head '
            f'passed different {what} per level ({[float(v) for v in values]})')
    return first


class BatchClsLossMixin:
    """Makes an mmdet dense head call its ``loss_cls`` once per mini-batch.

    mmdet's ``AnchorHead``, ``ATSSHead``, ``GFLHead`` and ``RTMDetHead`` compute their
    losses per FPN level (``loss_by_feat_single`` under ``multi_apply``) and sum the
    levels. A sum is right for a loss that is a sum divided by a shared ``avg_factor``,
    but the PU risk (docs/method.md#dense-detectors) has a ``max{0, .}`` and per-set
    normalisers, so it needs every location of the mini-batch, all levels and all
    images, in one call (as ``PURPNHead`` does for the RPN).

    Mixed in before an mmdet head class, it runs the head's own ``loss_by_feat`` with
    ``loss_cls`` replaced by a recorder: every per-level call is recorded (the recorder
    returns a zero), and every other loss (boxes, centerness, DFL) and every target is
    computed by mmdet's code unchanged. The recorded scores, targets (a labels tensor or
    a ``(labels, quality)`` tuple) and label weights are then concatenated in level
    order and ``loss_cls`` is called once; its value replaces the per-level list under
    the head's key ``loss_cls``.

    ``avg_factor`` is the one the head passed to every level (they must agree), or
    what :meth:`batch_avg_factor` makes of it, so a loss that is a sum divided by
    ``avg_factor`` (``FocalLoss``, ``QualityFocalLoss``) gives exactly the head's sum
    over levels. The PU losses ignore it.

    Building the head also (a) gives a loss that is sigmoid-only (its class sets
    ``sigmoid_only``) ``use_sigmoid=True`` when the config leaves it out, because mmdet's
    heads read ``loss_cls.use_sigmoid`` to choose ``C`` sigmoid logits over ``C + 1``
    softmax ones, and (b) checks that a loss with ``check_num_classes`` holds one prior
    per class of the head.

    **Box-fit negatives** (``box_fit_weight > 0``; anchor heads: RetinaNet, ATSS, GFL).
    An anchor that is no positive sample (nor ignored) is a wrong box of a labeled cell
    if its IoU with the cell's box is at least ``box_fit_iou`` or it covers at least
    ``box_fit_cover`` of the box (docs/method.md#box-fit-negatives). With B those anchors
    of the mini-batch, the head adds

        loss_box_fit = box_fit_weight / |B| * sum_{k in B} sum_c BCE(s_kc, 0)

    (every class logit towards background; 0 when B is empty). ``loss_cls`` is unchanged:
    the anchors stay in the unlabeled set of the PU risk.

    Args:
        box_fit_weight (float): Weight of the box-fit term, >= 0; 0 (default) leaves it
            out.
        box_fit_iou (float): IoU with a labeled box from which a negative anchor is a
            box-fit negative, in (0, 1).
        box_fit_cover (float, optional): Share of a labeled box covered from which a
            negative anchor is a box-fit negative, in (0, 1]; None: the IoU rule alone.
    """

    def __init__(self, *args, box_fit_weight: float = 0.0, box_fit_iou: float = 0.25,
                 box_fit_cover: Optional[float] = 0.7, **kwargs) -> None:
        loss_cls = kwargs.get('loss_cls')
        if loss_cls is not None and 'use_sigmoid' not in loss_cls:
            loss_type = loss_cls.get('type')
            if isinstance(loss_type, str):
                loss_type = MODELS.get(loss_type)
            if getattr(loss_type, 'sigmoid_only', False):
                kwargs['loss_cls'] = dict(loss_cls, use_sigmoid=True)
        super().__init__(*args, **kwargs)
        check_num_classes = getattr(self.loss_cls, 'check_num_classes', None)
        if check_num_classes is not None:
            check_num_classes(self.num_classes)
        check_box_fit_args(box_fit_iou, box_fit_cover, box_fit_weight, 'bbox_head')
        if box_fit_weight > 0 and not isinstance(getattr(self, 'prior_generator', None),
                                                 AnchorGenerator):
            raise ValueError(f'bbox_head.box_fit_weight: {type(self).__name__} places no '
                             'anchors; box-fit negatives need an anchor head (RetinaNet, '
                             'ATSS, GFL)')
        if box_fit_weight > 0 and not self.use_sigmoid_cls:
            raise ValueError('bbox_head.box_fit_weight: box-fit negatives of a dense head '
                             'need a sigmoid classifier (loss_cls.use_sigmoid=True)')
        self.box_fit_weight = float(box_fit_weight)
        self.box_fit_iou = float(box_fit_iou)
        self.box_fit_cover = box_fit_cover
        # names the positional arguments of the head's loss_by_feat (they differ per head)
        self._head_loss_signature = inspect.signature(super().loss_by_feat)

    def loss_by_feat(self, *args, **kwargs) -> dict:
        """The head's ``loss_by_feat`` with one ``loss_cls`` call for the mini-batch.

        Takes the arguments of the head's own ``loss_by_feat``.

        Returns:
            dict[str, Tensor]: The head's losses; ``loss_cls`` is one tensor.
        """
        loss_cls, recorder = self.loss_cls, _LossCallRecorder()
        self.loss_cls = recorder
        try:
            losses = super().loss_by_feat(*args, **kwargs)
        finally:
            self.loss_cls = loss_cls
        calls = recorder.calls
        if not calls:
            raise RuntimeError(f'{type(self).__name__}: the head computed no '
                               f'classification loss to pool')
        weights = [call.weight for call in calls]
        if any(weight is None for weight in weights):
            if not all(weight is None for weight in weights):
                raise ValueError('cannot pool the per-level classification losses: '
                                 'some levels have label weights and some not')
            weight = None
        else:
            weight = _concat(weights)
        target = _concat([call.target for call in calls])
        avg_factor = self.batch_avg_factor(
            _same_value([call.avg_factor for call in calls], 'avg_factor'), target)
        reductions = {call.reduction_override for call in calls}
        if len(reductions) != 1:
            raise ValueError(f'cannot pool the per-level classification losses: the '
                             f'head passed different reduction_override {reductions}')
        cls_score = _concat([call.cls_score for call in calls])
        per_level = getattr(self.loss_cls, 'per_level', False)
        if per_level or self.box_fit_weight > 0:  # bound only when read
            given = self._head_loss_signature.bind(*args, **kwargs).arguments
        level_kwargs = (self.sample_levels(given['cls_scores'], len(cls_score))
                        if per_level else {})
        losses['loss_cls'] = self.loss_cls(
            cls_score, target, weight, avg_factor=avg_factor,
            reduction_override=reductions.pop(), **level_kwargs)
        if self.box_fit_weight > 0:
            labels = target[0] if isinstance(target, tuple) else target
            box_fit = self.box_fit_mask(given['cls_scores'], given['batch_gt_instances'],
                                        labels, weight)
            losses['loss_box_fit'] = self.box_fit_loss(cls_score, box_fit)
        return losses

    def sample_levels(self, cls_scores: List[Tensor], num_samples: int) -> dict:
        """The FPN level of every pooled sample, as the PU loss's ``groups`` and
        ``num_groups`` (docs/method.md#level-wise-bracket).

        The pooled order is level-major (level by level, images within), as the
        per-level calls and FCOS's own flattening both give; a level holds one sample
        per location and anchor of each image.

        Raises:
            RuntimeError: the levels hold another number of samples than were pooled.
        """
        sizes = [score.numel() // self.cls_out_channels for score in cls_scores]
        if sum(sizes) != num_samples:
            raise RuntimeError(f'{type(self).__name__}: {sum(sizes)} locations on the '
                               f'FPN levels for {num_samples} pooled classification '
                               f'samples')
        device = cls_scores[0].device
        groups = torch.repeat_interleave(torch.arange(len(sizes), device=device),
                                         torch.tensor(sizes, device=device))
        return dict(groups=groups, num_groups=len(sizes))

    def box_fit_mask(self, cls_scores: List[Tensor], batch_gt_instances: list,
                     labels: Tensor, weight: Optional[Tensor]) -> Tensor:
        """``(num_samples,)`` bool, True for the box-fit negatives, in the pooled order
        (level, image, location, anchor) of ``labels`` and ``weight``.

        Raises:
            RuntimeError: the anchors are not as many as the pooled samples.
        """
        featmap_sizes = [score.shape[-2:] for score in cls_scores]
        level_anchors = self.prior_generator.grid_priors(featmap_sizes,
                                                         device=cls_scores[0].device)
        anchors = torch.cat(level_anchors)
        per_image = []  # (A,) per image, all levels: one overlap computation per image
        for gt in batch_gt_instances:
            boxes = get_box_tensor(gt.bboxes)
            if not len(boxes):
                per_image.append(anchors.new_zeros(len(anchors), dtype=torch.bool))
                continue
            max_iou = bbox_overlaps(anchors, boxes).max(dim=1).values
            max_cover = bbox_overlaps(boxes, anchors, mode='iof').max(dim=0).values
            per_image.append(box_fit_rule(max_iou, max_cover, self.box_fit_iou,
                                          self.box_fit_cover))
        # (image, level anchors) -> the pooled order: level by level, images within
        by_level = torch.stack(per_image).split([len(a) for a in level_anchors], dim=1)
        mask = torch.cat([level.reshape(-1) for level in by_level])
        if mask.numel() != labels.numel():
            raise RuntimeError(f'{type(self).__name__}: {mask.numel()} anchors for '
                               f'{labels.numel()} pooled classification samples')
        mask &= (labels < 0) | (labels >= self.num_classes)  # no positive
        if weight is not None:
            mask &= weight.reshape(mask.numel(), -1).amax(dim=1) > 0  # not ignored
        return mask

    def box_fit_loss(self, cls_score: Tensor, box_fit: Tensor) -> Tensor:
        """``box_fit_weight`` x the mean over the masked samples of their classes'
        background binary cross entropies."""
        if not box_fit.any():
            return cls_score.sum() * 0
        logits = cls_score[box_fit]
        bce = F.binary_cross_entropy_with_logits(logits, torch.zeros_like(logits),
                                                 reduction='none')
        return self.box_fit_weight * bce.sum(dim=1).mean()

    def batch_avg_factor(self, avg_factor, target):
        """The ``avg_factor`` of the pooled call, from the one passed to each level.

        The same here; a head that rescales its classification losses after the
        per-level calls overrides it (``PURTMDetHead``).
        """
        return avg_factor
