"""RPN head of the BDE baseline (Li et al., MICCAI 2020; a reconstruction,
docs/method.md#bde-reconstruction)."""
from typing import List

import torch
from torch import Tensor

from mmdet.models.utils import images_to_levels
from mmdet.registry import MODELS
from mmdet.structures.bbox import cat_boxes, get_box_tensor

from ..losses.bde import bde_weights, box_centres
from .pu_rpn_head import PURPNHead


@MODELS.register_module()
class BDERPNHead(PURPNHead):
    """RPN head whose unlabeled anchors are weighted by their box density.

    Reconstruction of BDE (no official code; docs/method.md#bde-reconstruction,
    ``mmdet_pu.models.losses.bde``):
    for each image the boxes regressed from **all** valid anchors (every level) are
    decoded without gradient; every sampled unlabeled anchor ``i`` (label =
    background, ``label_weight > 0``) gets its ``label_weight`` multiplied by

        E_i = mean_j ||c_i - c_j||_1 / max_{j,k} ||c_j - c_k||_1

    where ``c`` are the centres of the decoded boxes. Positives keep their weight.
    The classification loss is the configured ``loss_cls`` (cross entropy for BDE)
    with the usual ``avg_factor``, called once on the whole batch as in
    :class:`PURPNHead` (for cross entropy the same value as ``RPNHead``'s per-level
    sum); targets, sampling and the box loss are ``RPNHead``'s.
    """

    def reweight_samples(self, label_weights_list: List[Tensor], labels_list: List[Tensor],
                         anchor_list: list, valid_flag_list: list,
                         bbox_preds: List[Tensor]) -> List[Tensor]:
        """Multiply the weight of every sampled unlabeled anchor by its ``E_i``."""
        num_level_anchors = [anchors.size(0) for anchors in anchor_list[0]]
        # (image, all anchors of all levels) tensors, levels concatenated in order
        anchors = [cat_boxes(per_image) for per_image in anchor_list]
        valid = torch.stack([torch.cat(flags) for flags in valid_flag_list])
        labels = torch.cat(labels_list, dim=1)
        label_weights = torch.cat(label_weights_list, dim=1)
        deltas = torch.cat([
            pred.permute(0, 2, 3, 1).reshape(pred.size(0), -1,
                                             self.bbox_coder.encode_size)
            for pred in bbox_preds
        ], dim=1).detach()
        label_weights = label_weights * self._density_factors(
            anchors, deltas, valid, labels, label_weights)
        return images_to_levels(list(label_weights), num_level_anchors)

    @torch.no_grad()
    def _density_factors(self, anchors: List[Tensor], deltas: Tensor, valid: Tensor,
                         labels: Tensor, label_weights: Tensor) -> Tensor:
        """Factor per anchor ``(N, A)``: ``E_i`` for sampled unlabeled ones, else 1."""
        factors = label_weights.new_ones(label_weights.shape)
        unlabeled = (labels == self.num_classes) & (label_weights > 0)
        for img, img_anchors in enumerate(anchors):
            if not unlabeled[img].any():
                continue
            boxes = get_box_tensor(self.bbox_coder.decode(img_anchors, deltas[img]))
            centres = box_centres(boxes)
            factors[img, unlabeled[img]] = bde_weights(
                centres[unlabeled[img]], centres[valid[img]])
        return factors
