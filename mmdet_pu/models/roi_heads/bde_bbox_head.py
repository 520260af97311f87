"""RoI box head of the BDE baseline (Li et al., MICCAI 2020; a reconstruction,
docs/method.md#bde-reconstruction)."""
from typing import List, Optional

import torch
from mmengine.config import ConfigDict
from torch import Tensor

from mmdet.models.roi_heads.bbox_heads import Shared2FCBBoxHead
from mmdet.models.task_modules.samplers import SamplingResult
from mmdet.registry import MODELS
from mmdet.structures.bbox import get_box_tensor

from ..losses.bde import bde_weights, box_centres


@MODELS.register_module()
class BDEShared2FCBBoxHead(Shared2FCBBoxHead):
    """``Shared2FCBBoxHead`` whose unlabeled RoIs are weighted by their box density.

    Reconstruction of BDE (no official code; docs/method.md#bde-reconstruction,
    ``mmdet_pu.models.losses.bde``):
    the boxes this head regresses from the RoIs of an image are decoded without
    gradient (for class-specific regression, the box of the RoI's highest-scoring
    class), and every unlabeled RoI ``i`` (label = background, ``label_weight > 0``)
    gets its ``label_weight`` multiplied by

        E_i = mean_j ||c_i - c_j||_1 / max_{j,k} ||c_j - c_k||_1

    over the centres ``c`` of that image's regressed boxes. Positives keep weight 1;
    the loss is the configured ``loss_cls`` (cross entropy for BDE).

    The reference set is the RoIs the head is trained on, i.e. the proposals the
    RoI sampler drew for the image (a uniform random subset of the unlabeled
    proposals plus the positives and, with ``add_gt_as_proposals``, the annotated
    boxes): an mmdet bbox head never sees the other proposals, and the method bases
    only replace ``bbox_head`` (docs/design.md). docs/method.md#bde-reconstruction
    states the same reference: the RoIs sampled for the image.
    """

    def loss_and_target(self,
                        cls_score: Tensor,
                        bbox_pred: Tensor,
                        rois: Tensor,
                        sampling_results: List[SamplingResult],
                        rcnn_train_cfg: ConfigDict,
                        concat: bool = True,
                        reduction_override: Optional[str] = None) -> dict:
        """Compute the box head losses with BDE-weighted unlabeled RoIs.

        Arguments and return value are those of ``BBoxHead.loss_and_target``;
        ``concat`` must be True (targets of the whole batch in one tensor).
        """
        if not concat:
            raise ValueError(f'{type(self).__name__} weights the batch targets '
                             'together and needs concat=True')
        labels, label_weights, bbox_targets, bbox_weights = self.get_targets(
            sampling_results, rcnn_train_cfg, concat=True)
        label_weights = label_weights * self._density_factors(
            cls_score, bbox_pred, rois, labels, label_weights)
        losses = self.loss(
            cls_score,
            bbox_pred,
            rois,
            labels,
            label_weights,
            bbox_targets,
            bbox_weights,
            reduction_override=reduction_override)
        return dict(
            loss_bbox=losses,
            bbox_targets=(labels, label_weights, bbox_targets, bbox_weights))

    @torch.no_grad()
    def _density_factors(self, cls_score: Tensor, bbox_pred: Tensor, rois: Tensor,
                         labels: Tensor, label_weights: Tensor) -> Tensor:
        """Factor per RoI: ``E_i`` for unlabeled RoIs, 1 for the others."""
        factors = label_weights.new_ones(label_weights.shape)
        unlabeled = (labels == self.num_classes) & (label_weights > 0)
        if not unlabeled.any():
            return factors
        centres = box_centres(self._regressed_boxes(cls_score, bbox_pred, rois))
        for img in rois[:, 0].unique():
            in_img = rois[:, 0] == img
            query = in_img & unlabeled
            if query.any():
                factors[query] = bde_weights(centres[query], centres[in_img])
        return factors

    def _regressed_boxes(self, cls_score: Tensor, bbox_pred: Tensor,
                         rois: Tensor) -> Tensor:
        """Decoded boxes ``(n, 4)``, one per RoI (its best foreground class)."""
        deltas = bbox_pred.detach()
        if not self.reg_class_agnostic:
            best_class = cls_score[:, :self.num_classes].argmax(dim=1)
            deltas = deltas.view(deltas.size(0), self.num_classes, -1)[
                torch.arange(deltas.size(0), device=deltas.device), best_class]
        return get_box_tensor(self.bbox_coder.decode(rois[:, 1:], deltas))
