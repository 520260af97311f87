"""Fusion of the detections of several detectors of one image (docs/method.md#fused-ensemble).

Each class is fused apart. The detections of all ``M`` members are taken in descending
score; the highest one not yet used opens a cluster with every unused detection of its
class whose IoU with it exceeds ``iou_thr`` (its own included), as NMS would suppress
them. A cluster ``C`` gives one detection:

    box(C)   = sum_{d in C} s_d b_d / sum_{d in C} s_d
    score(C) = (1 / M) sum_m max_{d in C, d from member m} s_d     (0 for a member absent)

so a cell every member finds keeps their mean score, and a detection one member alone
makes keeps ``1 / M`` of it: the members vote with their scores, which ranks cells found
by all above the look-alikes one member takes for cells (weighted box fusion, Solovyev
et al. 2021, with the cluster formed around its best detection).
"""
from typing import Sequence, Tuple

import torch
from mmdet.structures.bbox import bbox_overlaps
from torch import Tensor


def fuse_detections(boxes: Sequence[Tensor], scores: Sequence[Tensor],
                    labels: Sequence[Tensor], iou_thr: float = 0.55
                    ) -> Tuple[Tensor, Tensor, Tensor]:
    """Fuse the detections of ``M = len(boxes)`` members of one image (module docstring).

    Args:
        boxes: per member ``(N_m, 4)`` boxes, x1 y1 x2 y2.
        scores: per member ``(N_m,)`` scores in [0, 1].
        labels: per member ``(N_m,)`` class indices.
        iou_thr: a detection joins a cluster when its IoU with the cluster's best
            detection is above this, in (0, 1).

    Returns:
        ``(boxes (K, 4), scores (K,), labels (K,))``, the clusters in descending score.
    """
    if not 0 < iou_thr < 1:
        raise ValueError(f'fuse_detections: iou_thr must be in (0, 1), got {iou_thr!r}')
    if not len(boxes) == len(scores) == len(labels) or not boxes:
        raise ValueError('fuse_detections: expected one boxes, scores and labels tensor '
                         f'per member, got {len(boxes)}, {len(scores)}, {len(labels)}')
    num_members = len(boxes)
    all_boxes = torch.cat([b.reshape(-1, 4) for b in boxes])
    all_scores = torch.cat([s.reshape(-1) for s in scores])
    all_labels = torch.cat([la.reshape(-1) for la in labels])
    member = torch.cat([torch.full((len(s.reshape(-1)),), m, dtype=torch.long,
                                   device=all_scores.device)
                        for m, s in enumerate(scores)])
    if not len(all_scores):
        return all_boxes, all_scores, all_labels
    order = torch.argsort(all_scores, descending=True, stable=True)
    all_boxes, all_scores = all_boxes[order], all_scores[order]
    all_labels, member = all_labels[order], member[order]
    joins = (bbox_overlaps(all_boxes, all_boxes) > iou_thr) \
        & (all_labels[:, None] == all_labels[None, :])
    free = torch.ones(len(all_scores), dtype=torch.bool, device=all_scores.device)
    fused_boxes, fused_scores, fused_labels = [], [], []
    for head in range(len(all_scores)):
        if not free[head]:
            continue
        cluster = joins[head] & free
        cluster[head] = True
        free &= ~cluster
        weights = all_scores[cluster]
        fused_boxes.append((all_boxes[cluster] * weights[:, None]).sum(0) / weights.sum()
                           if weights.sum() > 0 else all_boxes[head])
        best = torch.zeros(num_members, dtype=all_scores.dtype, device=all_scores.device)
        best.scatter_reduce_(0, member[cluster], weights, reduce='amax')
        fused_scores.append(best.sum() / num_members)
        fused_labels.append(all_labels[head])
    fused_scores = torch.stack(fused_scores)
    keep = torch.argsort(fused_scores, descending=True, stable=True)
    return (torch.stack(fused_boxes)[keep], fused_scores[keep],
            torch.stack(fused_labels)[keep])
