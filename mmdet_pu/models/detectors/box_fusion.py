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

**Per class.** The weights may be given per class, ``w_m,c`` (each class's column
summing to 1): a cluster of class ``c`` takes ``w_m,c`` for ``w_m``, and a member
without a vote for a class (``w_m,c = 0``) brings none of its detections of that class.
With one member voting for a class, that class's detections are the member's own.
``score_exponents`` ``e_m,c > 0`` first map each score to ``s ** e_m,c``: a monotone
map of [0, 1] onto itself, which keeps the order of a member's detections of the class
(its AP) and moves its scores, e.g. so that the threshold a member was validated at
reads 0.5 (:func:`threshold_exponent`).
"""
import math
from typing import Optional, Sequence, Tuple

import numpy as np
import torch
from mmdet.structures.bbox import bbox_overlaps
from mmengine.structures import InstanceData
from torch import Tensor

#: IoU above which a detection joins a cluster (the fit's ensembles, test-time flips).
FUSION_IOU = 0.55


def fuse_detections(boxes: Sequence[Tensor], scores: Sequence[Tensor],
                    labels: Sequence[Tensor], iou_thr: float = FUSION_IOU,
                    weights: Optional[Sequence] = None,
                    score_exponents: Optional[Sequence[Sequence[float]]] = None
                    ) -> Tuple[Tensor, Tensor, Tensor]:
    """Fuse the detections of ``M = len(boxes)`` members of one image (module docstring).

    Args:
        boxes: per member ``(N_m, 4)`` boxes, x1 y1 x2 y2.
        scores: per member ``(N_m,)`` scores in [0, 1].
        labels: per member ``(N_m,)`` class indices.
        iou_thr: a detection joins a cluster when its IoU with the cluster's best
            detection is above this, in (0, 1).
        weights: per member a weight >= 0, not all 0, normalised to sum to 1 (default:
            equal); or per member a list of C weights, one per class, each class's
            normalised over the members (:func:`member_weights`).
        score_exponents: per member a list of C exponents > 0 (default: all 1).

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
    weight_of = all_scores.new_tensor(
        vote_matrix(member_weights(weights, num_members)))
    exponent_of = all_scores.new_tensor(
        vote_matrix(member_exponents(score_exponents, num_members)))
    num_columns = max(weight_of.size(1), exponent_of.size(1))
    if 1 < min(weight_of.size(1), exponent_of.size(1)) != num_columns:
        raise ValueError(f'fuse_detections: weights for {weight_of.size(1)} classes but '
                         f'score exponents for {exponent_of.size(1)}')
    per_class = score_exponents is not None or (
        weights is not None and is_per_class(weights))
    if per_class and len(all_labels) and int(all_labels.max()) >= num_columns:
        raise ValueError(f'fuse_detections: the weights or exponents are given for '
                         f'{num_columns} classes, got a detection of class '
                         f'{int(all_labels.max())}')
    # (M, C) votes and exponents; a shared column serves every class
    weight_of = weight_of.expand(num_members, num_columns)
    exponent_of = exponent_of.expand(num_members, num_columns)
    column = all_labels if per_class else torch.zeros_like(all_labels)
    voting = weight_of[member, column] > 0  # a member without a vote brings nothing
    all_boxes, all_labels = all_boxes[voting], all_labels[voting]
    member, column = member[voting], column[voting]
    all_scores = all_scores[voting] ** exponent_of[member, column]
    if not len(all_scores):
        return all_boxes, all_scores, all_labels
    order = torch.argsort(all_scores, descending=True, stable=True)
    all_boxes, all_scores = all_boxes[order], all_scores[order]
    all_labels, member, column = all_labels[order], member[order], column[order]
    cluster, heads = greedy_clusters(all_boxes, all_labels, iou_thr)
    votes = all_scores * weight_of[member, column]
    weight = all_scores.new_zeros(len(heads)).index_add_(0, cluster, votes)
    box_sum = all_boxes.new_zeros(len(heads), 4).index_add_(
        0, cluster, all_boxes * votes[:, None])
    fused_boxes = torch.where(weight[:, None] > 0,
                              box_sum / weight.clamp(min=1e-12)[:, None], all_boxes[heads])
    best = all_scores.new_zeros(len(heads) * num_members).scatter_reduce_(
        0, cluster * num_members + member, all_scores, reduce='amax')
    fused_scores = (best.view(len(heads), num_members)
                    * weight_of[:, column[heads]].T).sum(dim=1)
    keep = torch.argsort(fused_scores, descending=True, stable=True)
    return fused_boxes[keep], fused_scores[keep], all_labels[heads][keep]


def greedy_clusters(boxes: Tensor, labels: Tensor, iou_thr: float) -> Tuple[Tensor, Tensor]:
    """The clusters of ``boxes`` taken in the given (descending score) order: the first
    box not yet used heads a cluster with every unused box of its label at IoU above
    ``iou_thr``. Returns each box's cluster index and the heads' indices, the clusters
    numbered in their heads' order. The IoUs are computed one label at a time (the
    clusters never mix labels), so memory grows with the largest class, not with all
    detections together."""
    cluster = np.full(len(boxes), -1)
    head_of = np.full(len(boxes), False)
    for label in torch.unique(labels):
        members = torch.nonzero(labels == label).flatten()
        joins = (bbox_overlaps(boxes[members], boxes[members]) > iou_thr).cpu().numpy()
        local = np.full(len(members), -1)
        for head in range(len(members)):  # greedy, on the host: no device round trips
            if local[head] < 0:
                taken = joins[head] & (local < 0)
                taken[head] = True
                local[taken] = head
        index = members.cpu().numpy()
        cluster[index] = index[local]
        head_of[index[local == np.arange(len(members))]] = True
    heads = np.flatnonzero(head_of)
    number = np.full(len(boxes), -1)
    number[heads] = np.arange(len(heads))
    device = boxes.device
    return (torch.as_tensor(number[cluster], device=device),
            torch.as_tensor(heads, device=device))


def fuse_instances(member_preds: Sequence[InstanceData], iou_thr: float = FUSION_IOU,
                   weights: Optional[Sequence] = None,
                   score_exponents: Optional[Sequence[Sequence[float]]] = None
                   ) -> InstanceData:
    """:func:`fuse_detections` of the members' ``InstanceData`` (``bboxes``, ``scores``,
    ``labels``), as ``InstanceData``."""
    fused = InstanceData()
    fused.bboxes, fused.scores, fused.labels = fuse_detections(
        [p.bboxes for p in member_preds], [p.scores for p in member_preds],
        [p.labels for p in member_preds], iou_thr, weights, score_exponents)
    return fused


def is_per_class(values: Sequence) -> bool:
    """Whether ``values`` (per member) holds a list per member rather than a number."""
    return any(isinstance(v, (list, tuple)) for v in values)


def member_weights(weights: Optional[Sequence], num_members: int) -> tuple:
    """``weights`` normalised, checked: equal ones for ``None``; a number per member
    summing to 1; or a list per member of one weight per class, each class's summing to
    1 over the members (a class no member votes for is an error)."""
    if weights is None:
        return (1.0 / num_members, ) * num_members
    if not is_per_class(weights):
        weights = tuple(float(w) for w in weights)
        if len(weights) != num_members or min(weights) < 0 or sum(weights) <= 0:
            raise ValueError(f'fusion weights: expected {num_members} weights >= 0, not '
                             f'all 0, got {list(weights)}')
        return tuple(w / sum(weights) for w in weights)
    if len(weights) != num_members:
        raise ValueError(f'fusion weights: expected one list of class weights per '
                         f'member ({num_members}), got {list(weights)}')
    rows = class_rows(weights, 'fusion weights')
    for c, column in enumerate(zip(*rows)):
        if min(column) < 0 or sum(column) <= 0:
            raise ValueError(f'fusion weights: class {c}: expected weights >= 0, not all '
                             f'0, over the {num_members} members, got {list(column)}')
    totals = [sum(column) for column in zip(*rows)]
    return tuple(tuple(w / total for w, total in zip(row, totals)) for row in rows)


def member_exponents(exponents: Optional[Sequence[Sequence[float]]],
                     num_members: int) -> tuple:
    """Per member a tuple of one score exponent > 0 per class (``(1.0,)`` each for
    ``None``); checked."""
    if exponents is None:
        return ((1.0, ), ) * num_members
    if len(exponents) != num_members or not all(
            isinstance(row, (list, tuple)) for row in exponents):
        raise ValueError(f'score exponents: expected {num_members} lists (one per '
                         f'member) of one exponent per class, got {list(exponents)}')
    rows = class_rows(exponents, 'score exponents')
    if min(min(row) for row in rows) <= 0:
        raise ValueError(f'score exponents: expected exponents > 0, got '
                         f'{[list(row) for row in rows]}')
    return rows


def class_rows(values: Sequence[Sequence[float]], name: str) -> tuple:
    """``values`` (a list per member) as tuples of floats of one common length."""
    rows = tuple(tuple(float(v) for v in row) if isinstance(row, (list, tuple)) else None
                 for row in values)
    if None in rows or len({len(row) for row in rows}) != 1 or not rows[0]:
        raise ValueError(f'{name}: expected one list per member, all of one length (one '
                         f'value per class), got {list(values)}')
    return rows


def vote_matrix(values: tuple) -> list:
    """A member's numbers (:func:`member_weights`, :func:`member_exponents`) as an
    ``(M, C)`` nested list, ``C = 1`` for one value per member."""
    return [list(row) if isinstance(row, tuple) else [row] for row in values]


def threshold_exponent(threshold: float) -> float:
    """The score exponent that maps ``threshold`` in (0, 1) to 0.5:
    ``log 0.5 / log threshold``."""
    if not 0 < threshold < 1:
        raise ValueError(f'threshold_exponent: expected a threshold in (0, 1), got '
                         f'{threshold!r}')
    return math.log(0.5) / math.log(threshold)
