"""Soft classification targets for the RoIs of weighted cells
(docs/method.md#distilled-detector)."""
from typing import List, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from mmdet.models.task_modules.samplers import SamplingResult


class SoftTargetMixin:
    """A bbox head mixin (before the mmdet head in the bases) whose positive RoI of a
    cell with weight w in (0, 1] learns the soft target w on the cell's class and
    1 - w on the background:

        H_w(c, m) = w H(c, m) + (1 - w) H(c, bg)

    with H the softmax cross entropy. ``get_targets`` multiplies the positive's label
    weight by w (the loss_cls term w H(c, m)) and ``loss_and_target`` adds

        loss_soft_bg = loss_weight / N * sum_{k positive} (1 - w_k) H(c_k, bg)

    to ``loss_bbox``, N the RoIs the cross entropy averages over, so that the two
    together are the cross entropy with the soft targets. A student taught a teacher's
    detections weighted by their scores (score-weighted distillation) learns each as a
    cell with the teacher's confidence, neither as certain nor dropped.

    The weights come from the sampler (``OverlapRandomSampler``'s ``pos_gt_weights``,
    from ``gt_instances.weights``, ``PackCellInputs``); without them the head is the
    mmdet head it is mixed into. Meant for the detector's own cross entropy, a softmax
    classifier (background in the last channel).
    """

    def get_targets(self, sampling_results: List[SamplingResult], rcnn_train_cfg,
                    concat: bool = True) -> tuple:
        """``BBoxHead.get_targets``, the positives' label weights times their weights."""
        labels, label_weights, bbox_targets, bbox_weights = super().get_targets(
            sampling_results, rcnn_train_cfg, concat=concat)
        weights = self.roi_weights(sampling_results)
        if weights is not None:
            if concat:
                label_weights = label_weights * torch.cat(weights).to(label_weights)
            else:
                label_weights = [lw * w.to(lw) for lw, w in zip(label_weights, weights)]
        return labels, label_weights, bbox_targets, bbox_weights

    def loss_and_target(self, cls_score: Tensor, bbox_pred: Tensor, rois: Tensor,
                        sampling_results: List[SamplingResult], *args, **kwargs) -> dict:
        """``BBoxHead.loss_and_target`` (same arguments) plus ``loss_soft_bg`` in
        ``loss_bbox`` where the cells carry weights."""
        result = super().loss_and_target(cls_score, bbox_pred, rois, sampling_results,
                                         *args, **kwargs)
        weights = self.roi_weights(sampling_results)
        if weights is not None and cls_score is not None and cls_score.numel() > 0:
            result['loss_bbox']['loss_soft_bg'] = self.soft_background_loss(
                cls_score, torch.cat(weights).to(cls_score))
        return result

    @staticmethod
    def roi_weights(sampling_results: List[SamplingResult]) -> Optional[List[Tensor]]:
        """Per image, the ``(num_rois,)`` weights in RoI order (the positives' cells',
        1 for the negatives), or None when no positive carries one."""
        if not any(hasattr(r, 'pos_gt_weights') for r in sampling_results):
            return None
        weights = []
        for result in sampling_results:
            pos = getattr(result, 'pos_gt_weights', None)
            if pos is None:
                pos = result.pos_priors.new_ones(result.pos_priors.size(0))
            weights.append(torch.cat([pos, pos.new_ones(result.neg_priors.size(0))]))
        return weights

    def soft_background_loss(self, cls_score: Tensor, weights: Tensor) -> Tensor:
        """``loss_soft_bg`` of the class docstring; ``weights`` ``(num_rois,)``."""
        if self.loss_cls.use_sigmoid:
            raise ValueError(f'bbox_head.loss_cls: {type(self).__name__} learns soft '
                             'targets with a softmax classifier (use_sigmoid=False)')
        h_bg = -F.log_softmax(cls_score, dim=1)[:, -1]
        return (self.loss_cls.loss_weight * ((1 - weights) * h_bg).sum()
                / max(cls_score.size(0), 1))
