"""RoI box head that learns the badly fitting boxes of labeled cells as background
(docs/method.md#box-fit-negatives)."""
from typing import List, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from mmdet.models.roi_heads.bbox_heads import Shared2FCBBoxHead
from mmdet.models.task_modules.samplers import SamplingResult
from mmdet.registry import MODELS

from ..box_fit import box_fit_rule, check_box_fit_args
from .soft_targets import SoftTargetMixin


@MODELS.register_module()
class BoxFitShared2FCBBoxHead(SoftTargetMixin, Shared2FCBBoxHead):
    """``Shared2FCBBoxHead`` with a cross-entropy term on the box-fit negatives, and the
    soft targets of weighted cells (:class:`~.soft_targets.SoftTargetMixin`).

    A sampled negative RoI (IoU < ``pos_iou_thr`` with every labeled box) is a wrong
    box of an annotated cell if its IoU with the cell's box is at least
    ``box_fit_iou`` (too small, shifted, somewhat too large) or if it covers at least
    ``box_fit_cover`` of the cell's box (too large: it also holds neighbours). It is
    no correct box of that cell, and, overlapping it that much, none of an unannotated
    neighbour either, so it is a known negative in an otherwise unlabeled set. With B
    those RoIs of the batch, the head adds

        loss_box_fit = box_fit_weight / |B| * sum_{k in B} H(c_k, bg)

    (0 when B is empty) to its ``loss_cls`` and ``loss_bbox``, which are unchanged:
    the RoIs stay in the unlabeled set of a PU loss. The classifier learns from the
    annotated cells what a badly fitting box looks like and ranks such boxes of
    unannotated cells low too (docs/method.md#box-fit-negatives).

    Needs ``train_cfg.rcnn.sampler.type='OverlapRandomSampler'`` (it records the
    negatives' overlaps) and a softmax classifier (background in the last channel).

    Args:
        box_fit_iou (float): IoU with a labeled box from which a negative is a
            box-fit negative, in (0, 1).
        box_fit_cover (float, optional): Share of a labeled box covered from which a
            negative is a box-fit negative, in (0, 1]; None: the IoU rule alone.
        box_fit_weight (float): Weight of the term, >= 0.
        **kwargs: ``Shared2FCBBoxHead``'s arguments.
    """

    def __init__(self,
                 box_fit_iou: float = 0.25,
                 box_fit_cover: Optional[float] = 0.7,
                 box_fit_weight: float = 1.0,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        check_box_fit_args(box_fit_iou, box_fit_cover, box_fit_weight, 'bbox_head')
        if self.loss_cls.use_sigmoid:
            raise ValueError(f'bbox_head.loss_cls: {type(self).__name__} needs a softmax '
                             'classifier (use_sigmoid=False)')
        self.box_fit_iou = float(box_fit_iou)
        self.box_fit_cover = box_fit_cover
        self.box_fit_weight = float(box_fit_weight)

    def loss_and_target(self, cls_score: Tensor, bbox_pred: Tensor, rois: Tensor,
                        sampling_results: List[SamplingResult], *args, **kwargs) -> dict:
        """``BBoxHead.loss_and_target`` (same arguments) plus ``loss_box_fit`` in
        ``loss_bbox``."""
        result = super().loss_and_target(cls_score, bbox_pred, rois, sampling_results,
                                         *args, **kwargs)
        if cls_score is not None and cls_score.numel() > 0:
            box_fit = self.box_fit_mask(sampling_results)
            result['loss_bbox']['loss_box_fit'] = self.box_fit_loss(cls_score, box_fit)
        return result

    def box_fit_mask(self, sampling_results: List[SamplingResult]) -> Tensor:
        """``(num_rois,)`` bool, True for the box-fit negatives, in RoI order.

        Raises:
            ValueError: if the sampler did not record the overlaps.
        """
        masks = []
        for result in sampling_results:
            if not hasattr(result, 'neg_max_coverage'):
                raise ValueError(
                    f'{type(self).__name__} needs the overlaps of the sampled negatives: set '
                    "train_cfg.rcnn.sampler.type='OverlapRandomSampler'")
            overlaps = result.neg_max_overlaps
            masks.append(overlaps.new_zeros(result.pos_priors.size(0), dtype=torch.bool))
            masks.append(box_fit_rule(overlaps, result.neg_max_coverage, self.box_fit_iou,
                                      self.box_fit_cover))
        return torch.cat(masks)

    def box_fit_loss(self, cls_score: Tensor, box_fit: Tensor) -> Tensor:
        """``box_fit_weight`` x the mean background cross entropy of the masked RoIs."""
        if not box_fit.any():
            return cls_score.sum() * 0
        h_bg = -F.log_softmax(cls_score[box_fit], dim=1)[:, -1]
        return self.box_fit_weight * h_bg.mean()
