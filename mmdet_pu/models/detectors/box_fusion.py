"""Fusion of the detections of several detectors of one image (docs/method.md#fused-ensemble).

Each class is fused apart. The detections of all ``M`` members are taken in descending
score; the highest one not yet used opens a cluster with every unused detection of its
class whose IoU with it exceeds ``iou_thr`` (its own included), as NMS would suppress
them. With member weights ``w_m`` (summing to 1; equal by default), a cluster ``C`` gives
one detection:

    box(C)   = sum_{d in C} w_m(d) s_d b_d / sum_{d in C} w_m(d) s_d
    score(C) = sum_m w_m max_{d in C, d from member m} s_d     (0 for a member absent)

so a cell every member finds keeps their weighted mean score, and a detection one member
alone makes keeps its weight's share of it: the members vote with their scores, which
ranks cells found by all above the look-alikes one member takes for cells (weighted box
fusion, Solovyev et al. 2021, with the cluster formed around its best detection).
"""
from typing import Optional, Sequence, Tuple

import numpy as np
import torch
from mmdet.structures.bbox import bbox_overlaps
from torch import Tensor


def fuse_detections(boxes: Sequence[Tensor], scores: Sequence[Tensor],
                    labels: Sequence[Tensor], iou_thr: float = 0.55,
                    weights: Optional[Sequence[float]] = None
                    ) -> Tuple[Tensor, Tensor, Tensor]:
    """Fuse the detections of ``M = len(boxes)`` members of one image (module docstring).

    Args:
        boxes: per member ``(N_m, 4)`` boxes, x1 y1 x2 y2.
        scores: per member ``(N_m,)`` scores in [0, 1].
        labels: per member ``(N_m,)`` class indices.
        iou_thr: a detection joins a cluster when its IoU with the cluster's best
            detection is above this, in (0, 1).
        weights: per member a weight >= 0, not all 0, normalised to sum to 1 (default:
            equal).

    Returns:
        ``(boxes (K, 4), scores (K,), labels (K,))``, the clusters in descending score.
    """
    if not 0 < iou_thr < 1:
        raise ValueError(f'fuse_detections: iou_thr must be in (0, 1), got {iou_thr!r}')
    if not len(boxes) == len(scores) == len(labels) or not boxes:
        raise ValueError('fuse_detections: expected one boxes, scores and labels tensor '
                         f'per member, got {len(boxes)}, {len(scores)}, {len(labels)}')
    num_members = len(boxes)
    weights = member_weights(weights, num_members)
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
    joins = ((bbox_overlaps(all_boxes, all_boxes) > iou_thr)
             & (all_labels[:, None] == all_labels[None, :])).cpu().numpy()
    # greedy clustering on the host: one pass, no device round trip per cluster
    cluster = np.full(len(joins), -1)
    heads = []
    for head in range(len(joins)):
        if cluster[head] < 0:
            taken = joins[head] & (cluster < 0)
            taken[head] = True
            cluster[taken] = len(heads)
            heads.append(head)
    device = all_scores.device
    cluster = torch.as_tensor(cluster, device=device)
    heads = torch.as_tensor(heads, device=device)
    member_weight = all_scores.new_tensor(weights)
    votes = all_scores * member_weight[member]
    weight = all_scores.new_zeros(len(heads)).index_add_(0, cluster, votes)
    box_sum = all_boxes.new_zeros(len(heads), 4).index_add_(
        0, cluster, all_boxes * votes[:, None])
    fused_boxes = torch.where(weight[:, None] > 0,
                              box_sum / weight.clamp(min=1e-12)[:, None], all_boxes[heads])
    best = all_scores.new_zeros(len(heads) * num_members).scatter_reduce_(
        0, cluster * num_members + member, all_scores, reduce='amax')
    fused_scores = best.view(len(heads), num_members) @ member_weight
    keep = torch.argsort(fused_scores, descending=True, stable=True)
    return fused_boxes[keep], fused_scores[keep], all_labels[heads][keep]


def member_weights(weights: Optional[Sequence[float]], num_members: int) -> Tuple[float, ...]:
    """``weights`` normalised to sum to 1, equal ones for ``None``; checked."""
    if weights is None:
        return (1.0 / num_members, ) * num_members
    weights = tuple(float(w) for w in weights)
    if len(weights) != num_members or min(weights) < 0 or sum(weights) <= 0:
        raise ValueError(f'fusion weights: expected {num_members} weights >= 0, not all '
                         f'0, got {list(weights)}')
    return tuple(w / sum(weights) for w in weights)
