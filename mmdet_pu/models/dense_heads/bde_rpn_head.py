"""RPN head of the BDE baseline (Li et al., MICCAI 2020; reconstruction, SPEC §3)."""
from typing import List

import torch
from torch import Tensor

from mmdet.models.dense_heads import RPNHead
from mmdet.models.utils import images_to_levels, multi_apply
from mmdet.registry import MODELS
from mmdet.structures.bbox import cat_boxes, get_box_tensor
from mmdet.utils import InstanceList, OptInstanceList

from ..losses.bde import bde_weights, box_centres


@MODELS.register_module()
class BDERPNHead(RPNHead):
    """``RPNHead`` whose unlabeled anchors are weighted by their box density.

    Reconstruction of BDE (no official code; SPEC §3, ``mmdet_pu.models.losses.bde``):
    for each image the boxes regressed from **all** valid anchors (every level) are
    decoded without gradient; every sampled unlabeled anchor ``i`` (label =
    background, ``label_weight > 0``) gets its ``label_weight`` multiplied by

        E_i = mean_j ||c_i - c_j||_1 / max_{j,k} ||c_j - c_k||_1

    where ``c`` are the centres of the decoded boxes. Positives keep their weight.
    The classification loss is the configured ``loss_cls`` (cross entropy for BDE)
    with the usual ``avg_factor``; targets, sampling and the box loss are
    ``RPNHead``'s.
    """

    def loss_by_feat(self,
                     cls_scores: List[Tensor],
                     bbox_preds: List[Tensor],
                     batch_gt_instances: InstanceList,
                     batch_img_metas: List[dict],
                     batch_gt_instances_ignore: OptInstanceList = None) -> dict:
        """Compute the RPN losses with BDE-weighted unlabeled anchors.

        Args:
            cls_scores (list[Tensor]): Box scores of each level,
                ``(N, num_anchors * cls_out_channels, H, W)``.
            bbox_preds (list[Tensor]): Box deltas of each level,
                ``(N, num_anchors * 4, H, W)``.
            batch_gt_instances (list[:obj:`InstanceData`]): Ground truth per image.
            batch_img_metas (list[dict]): Meta information of each image.
            batch_gt_instances_ignore (list[:obj:`InstanceData`], optional): Ignored
                ground truth per image.

        Returns:
            dict[str, list[Tensor]]: ``loss_rpn_cls`` and ``loss_rpn_bbox`` per level.
        """
        featmap_sizes = [featmap.size()[-2:] for featmap in cls_scores]
        anchor_list, valid_flag_list = self.get_anchors(
            featmap_sizes, batch_img_metas, device=cls_scores[0].device)
        (labels_list, label_weights_list, bbox_targets_list, bbox_weights_list,
         avg_factor) = self.get_targets(
             anchor_list, valid_flag_list, batch_gt_instances, batch_img_metas,
             batch_gt_instances_ignore=batch_gt_instances_ignore)

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
        label_weights_list = images_to_levels(list(label_weights), num_level_anchors)

        all_anchor_list = images_to_levels(anchors, num_level_anchors)
        losses_cls, losses_bbox = multi_apply(
            self.loss_by_feat_single,
            cls_scores,
            bbox_preds,
            all_anchor_list,
            labels_list,
            label_weights_list,
            bbox_targets_list,
            bbox_weights_list,
            avg_factor=avg_factor)
        return dict(loss_rpn_cls=losses_cls, loss_rpn_bbox=losses_bbox)

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
