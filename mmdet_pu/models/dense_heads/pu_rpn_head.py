"""RPN head whose classification risk is estimated once per mini-batch
(docs/method.md#binary-pu-risk)."""
from typing import List

import torch
from torch import Tensor

from mmdet.models.dense_heads import RPNHead
from mmdet.models.utils import images_to_levels
from mmdet.registry import MODELS
from mmdet.structures.bbox import cat_boxes, get_box_tensor
from mmdet.utils import InstanceList, OptInstanceList


@MODELS.register_module()
class PURPNHead(RPNHead):
    """RPN head that calls its losses once on all FPN levels and images.

    mmdet's ``AnchorHead.loss_by_feat`` calls ``loss_cls`` once per FPN level and sums
    the results. That is fine for cross entropy, a mean over samples, but the PU risk
    (``PULoss``, paper Section 2.2.1) has a non-linear ``max{0, .}`` and per-set
    normalisers, so the paper's estimate (docs/method.md#binary-pu-risk) needs every
    sampled anchor of the mini-batch at once: all levels and all images. This head
    computes targets exactly as ``RPNHead`` and concatenates them before one call of
    ``loss_cls`` and one of ``loss_bbox``.
    (``RPNHead`` with ``PULoss`` estimates one risk per level and sums them instead; the
    synthetic multi-class config does that, measured better there: docs/experiments.md,
    "Multi-class: the RPN risk per FPN level".)

    For losses that are sums divided by ``avg_factor`` (``CrossEntropyLoss``,
    ``L1Loss``, ...) the result equals ``RPNHead``'s sum over levels. The returned keys
    are ``RPNHead``'s: ``loss_rpn_cls`` and ``loss_rpn_bbox``.
    """

    def loss_by_feat(self,
                     cls_scores: List[Tensor],
                     bbox_preds: List[Tensor],
                     batch_gt_instances: InstanceList,
                     batch_img_metas: List[dict],
                     batch_gt_instances_ignore: OptInstanceList = None) -> dict:
        """Compute the RPN losses over the whole mini-batch.

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
            dict[str, Tensor]: ``loss_rpn_cls`` and ``loss_rpn_bbox``.
        """
        featmap_sizes = [featmap.size()[-2:] for featmap in cls_scores]
        anchor_list, valid_flag_list = self.get_anchors(
            featmap_sizes, batch_img_metas, device=cls_scores[0].device)
        (labels_list, label_weights_list, bbox_targets_list, bbox_weights_list,
         avg_factor) = self.get_targets(
             anchor_list, valid_flag_list, batch_gt_instances, batch_img_metas,
             batch_gt_instances_ignore=batch_gt_instances_ignore)
        label_weights_list = self.reweight_samples(
            label_weights_list, labels_list, anchor_list, valid_flag_list, bbox_preds)

        # Every per-level tensor is flattened in (image, y, x, anchor) order, as in
        # AnchorHead.loss_by_feat_single, then the levels are concatenated.
        cls_score = torch.cat([
            score.permute(0, 2, 3, 1).reshape(-1, self.cls_out_channels)
            for score in cls_scores
        ])
        labels = torch.cat([level.reshape(-1) for level in labels_list])
        label_weights = torch.cat([level.reshape(-1) for level in label_weights_list])
        loss_cls = self.loss_cls(
            cls_score, labels, label_weights, avg_factor=avg_factor)

        box_dim = self.bbox_coder.encode_size
        bbox_pred = torch.cat([
            pred.permute(0, 2, 3, 1).reshape(-1, box_dim) for pred in bbox_preds
        ])
        target_dim = bbox_targets_list[0].size(-1)
        bbox_targets = torch.cat(
            [level.reshape(-1, target_dim) for level in bbox_targets_list])
        bbox_weights = torch.cat(
            [level.reshape(-1, target_dim) for level in bbox_weights_list])
        if self.reg_decoded_bbox:
            num_level_anchors = [anchors.size(0) for anchors in anchor_list[0]]
            level_anchors = images_to_levels(
                [cat_boxes(anchors) for anchors in anchor_list], num_level_anchors)
            anchors = torch.cat([
                level.reshape(-1, level.size(-1)) for level in level_anchors
            ])
            bbox_pred = get_box_tensor(self.bbox_coder.decode(anchors, bbox_pred))
        loss_bbox = self.loss_bbox(
            bbox_pred, bbox_targets, bbox_weights, avg_factor=avg_factor)
        return dict(loss_rpn_cls=loss_cls, loss_rpn_bbox=loss_bbox)

    def reweight_samples(self, label_weights_list: List[Tensor], labels_list: List[Tensor],
                         anchor_list: list, valid_flag_list: list,
                         bbox_preds: List[Tensor]) -> List[Tensor]:
        """Classification weights of the anchors, per level ``(N, A_l)``.

        Unchanged here; a subclass can re-weight samples from the targets, the anchors
        and the regressed boxes (``BDERPNHead``).
        """
        return label_weights_list
