"""RoI sampler that keeps how much each sampled negative overlaps the labeled boxes
(docs/method.md#box-fit-negatives)."""
from mmdet.models.task_modules.samplers import RandomSampler, SamplingResult
from mmdet.registry import TASK_UTILS
from mmdet.structures.bbox import bbox_overlaps, get_box_tensor


@TASK_UTILS.register_module()
class OverlapRandomSampler(RandomSampler):
    """mmdet's ``RandomSampler`` whose results also carry, per sampled negative:

    * ``neg_max_overlaps`` (Tensor, ``(num_neg,)``): its largest IoU with a labeled box
      of its image (the assigner's ``max_overlaps``);
    * ``neg_max_coverage`` (Tensor, ``(num_neg,)``): the largest share of a labeled
      box's area that it covers, max_g |r ∩ g| / |g|;
    * ``pos_gt_weights`` (Tensor, ``(num_pos,)``), where the labels carry weights
      (``gt_instances.weights``, ``PackCellInputs``): the weight of each sampled
      positive's cell, the soft target of
      :class:`~mmdet_pu.models.roi_heads.SoftTargetMixin`.

    The overlaps are 0 in an image without labeled boxes. Sampling itself is
    ``RandomSampler``'s: the same arguments draw the same RoIs.
    """

    def sample(self, assign_result, pred_instances, gt_instances,
               **kwargs) -> SamplingResult:
        sampling_result = super().sample(assign_result, pred_instances,
                                         gt_instances, **kwargs)
        # With add_gt_as_proposals the assign result was extended in place, so its
        # indices are those of the sampling result.
        neg_inds = sampling_result.neg_inds
        sampling_result.neg_max_overlaps = assign_result.max_overlaps[neg_inds]
        gt_boxes = get_box_tensor(gt_instances.bboxes)
        negatives = get_box_tensor(sampling_result.neg_priors)
        if len(gt_boxes) and len(negatives):
            coverage = bbox_overlaps(gt_boxes, negatives, mode='iof').max(dim=0).values
        else:
            coverage = negatives.new_zeros(len(negatives))
        sampling_result.neg_max_coverage = coverage
        if 'weights' in gt_instances:
            sampling_result.pos_gt_weights = gt_instances.weights[
                sampling_result.pos_assigned_gt_inds].to(negatives.dtype)
        return sampling_result
