"""Greedy one-to-one matching of detections to ground-truth cells (docs/method.md#matching).

Predictions with ``score >= score_thr`` are visited in descending score order. Each one
is paired with the *unmatched* ground truth of its own class that it overlaps most (IoU
criterion) or whose centre is closest (distance criterion). The prediction is a true
positive (TP) if that pair passes the criterion (IoU ``>= iou_thr`` or centre distance
``<= radius`` px); the ground truth is then consumed. Otherwise the prediction is a false
positive (FP) and the ground truth stays available. Ground truths left unmatched are false
negatives (FN). Boxes are ``(x1, y1, x2, y2)`` in pixels; IoU uses continuous coordinates
(no ``+1``), as ``mmdet.structures.bbox.bbox_overlaps``. Detections of ignored regions
are neither (:func:`dont_care`).
"""
from typing import NamedTuple, Optional

import numpy as np

#: What a detection is, by code (:func:`error_kinds`): a true positive, or a false
#: positive of one of four kinds.
ERROR_KINDS = ('tp', 'duplicate', 'class', 'box', 'background')
#: IoU with a ground-truth box from which a false positive counts as a wrong box of it.
BOX_ERROR_IOU = 0.1


class ImageMatch(NamedTuple):
    """Outcome of matching the detections of one image.

    Attributes:
        kept: (N,) bool, prediction passed the score threshold (only those are matched).
        pred_tp: (N,) bool, prediction is a TP (always ``False`` where not ``kept``).
        gt_matched: (M,) bool, ground truth was matched by a TP (``False`` means FN).
        pred_gt: (N,) int, the ground truth a TP matched (-1 for any other prediction).
    """
    kept: np.ndarray
    pred_tp: np.ndarray
    gt_matched: np.ndarray
    pred_gt: np.ndarray


def to_numpy(value) -> np.ndarray:
    """A tensor (on any device), mmdet ``BaseBoxes`` or array-like as a numpy array:
    what the matching takes, from the detectors' results."""
    value = getattr(value, 'tensor', value)  # HorizontalBoxes -> tensor
    if hasattr(value, 'detach'):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def box_iou(boxes_a, boxes_b):
    """(A, B) IoU matrix of two sets of ``(x1, y1, x2, y2)`` boxes."""
    a = np.asarray(boxes_a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(boxes_b, dtype=np.float64).reshape(-1, 4)
    width = (np.minimum(a[:, None, 2], b[None, :, 2])
             - np.maximum(a[:, None, 0], b[None, :, 0])).clip(min=0)
    height = (np.minimum(a[:, None, 3], b[None, :, 3])
              - np.maximum(a[:, None, 1], b[None, :, 1])).clip(min=0)
    inter = width * height
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = area_a[:, None] + area_b[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def centre_distance(boxes_a, boxes_b):
    """(A, B) Euclidean distances between the centres of two sets of boxes."""
    a = np.asarray(boxes_a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(boxes_b, dtype=np.float64).reshape(-1, 4)
    centre_a = (a[:, :2] + a[:, 2:]) / 2
    centre_b = (b[:, :2] + b[:, 2:]) / 2
    return np.linalg.norm(centre_a[:, None, :] - centre_b[None, :, :], axis=-1)


def match_image(pred_bboxes, pred_scores, pred_labels, gt_bboxes, gt_labels,
                score_thr: float = 0.5, iou_thr: float = 0.5,
                radius: Optional[float] = None) -> ImageMatch:
    """Match the detections of one image to its ground truth, class by class.

    Args:
        pred_bboxes: (N, 4) predicted boxes.
        pred_scores: (N,) confidence scores.
        pred_labels: (N,) class indices.
        gt_bboxes: (M, 4) ground-truth boxes.
        gt_labels: (M,) class indices.
        score_thr: predictions with a lower score are ignored.
        iou_thr: a pair is a TP if its IoU is ``>= iou_thr`` (unused with ``radius``).
        radius: if given, the criterion is centre distance ``<= radius`` px instead.

    Returns:
        ImageMatch. Ties (equal scores, equal overlaps) resolve to the lower index.
    """
    pred_bboxes = np.asarray(pred_bboxes, dtype=np.float64).reshape(-1, 4)
    pred_scores = np.asarray(pred_scores, dtype=np.float64).reshape(-1)
    pred_labels = np.asarray(pred_labels).reshape(-1)
    gt_bboxes = np.asarray(gt_bboxes, dtype=np.float64).reshape(-1, 4)
    gt_labels = np.asarray(gt_labels).reshape(-1)
    if not len(pred_bboxes) == len(pred_scores) == len(pred_labels):
        raise ValueError(
            f'predictions: {len(pred_bboxes)} boxes, {len(pred_scores)} scores and '
            f'{len(pred_labels)} labels; expected the same number')
    if len(gt_bboxes) != len(gt_labels):
        raise ValueError(f'ground truth: {len(gt_bboxes)} boxes and {len(gt_labels)} '
                         'labels; expected the same number')

    kept = pred_scores >= score_thr
    pred_tp = np.zeros(len(pred_bboxes), dtype=bool)
    pred_gt = np.full(len(pred_bboxes), -1, dtype=np.int64)
    gt_matched = np.zeros(len(gt_bboxes), dtype=bool)
    if radius is None:
        # Higher is better: IoU; a pair passes with IoU >= iou_thr.
        affinity = box_iou(pred_bboxes, gt_bboxes)
        threshold = iou_thr
    else:
        # Higher is better: negative distance; a pair passes with distance <= radius.
        affinity = -centre_distance(pred_bboxes, gt_bboxes)
        threshold = -radius
    # Pairs across classes can never match.
    affinity[pred_labels[:, None] != gt_labels[None, :]] = -np.inf

    order = np.argsort(-pred_scores, kind='stable')
    for i in order[kept[order]]:
        candidates = np.where(gt_matched, -np.inf, affinity[i])
        if candidates.size == 0:
            break
        j = int(np.argmax(candidates))
        if candidates[j] >= threshold:
            pred_tp[i] = True
            pred_gt[i] = j
            gt_matched[j] = True
    return ImageMatch(kept, pred_tp, gt_matched, pred_gt)


def dont_care(match: ImageMatch, pred_bboxes, ignored_bboxes, iou_thr: float = 0.5,
              radius: Optional[float] = None) -> np.ndarray:
    """(N,) bool: detections that are not true positives and pass the criterion with an
    ignored region (docs/method.md#unclassified-nuclei).

    Ignored regions (``iscrowd`` annotations: e.g. nuclei without a class) are neither
    cells nor background: a detection of one, of any class, is left out of the counts
    and the ranking (neither TP nor FP), and an ignored region is never a miss. Matching
    to the cells comes first, so a detection that is a true positive stays one.
    """
    pred_bboxes = np.asarray(pred_bboxes, dtype=np.float64).reshape(-1, 4)
    ignored_bboxes = np.asarray(ignored_bboxes, dtype=np.float64).reshape(-1, 4)
    if not len(ignored_bboxes):
        return np.zeros(len(pred_bboxes), dtype=bool)
    if radius is None:
        passes = box_iou(pred_bboxes, ignored_bboxes) >= iou_thr
    else:
        passes = centre_distance(pred_bboxes, ignored_bboxes) <= radius
    return passes.any(axis=1) & ~match.pred_tp


def count_per_class(match: ImageMatch, pred_labels, gt_labels, num_classes: int,
                    image: Optional[str] = None):
    """TP, FP and FN counts per class of one matched image.

    Raises:
        ValueError: for a label outside ``0..num_classes - 1``, naming ``image`` (its
            path) when given.

    Returns:
        Three (num_classes,) int arrays ``tp, fp, fn``.
    """
    pred_labels = np.asarray(pred_labels, dtype=np.int64).reshape(-1)
    gt_labels = np.asarray(gt_labels, dtype=np.int64).reshape(-1)
    where = f'{image}: ' if image is not None else ''
    for name, labels in (('prediction', pred_labels), ('ground-truth', gt_labels)):
        bad = labels[(labels < 0) | (labels >= num_classes)]
        if bad.size:
            raise ValueError(f'{where}{name} label {int(bad[0])} out of range: expected '
                             f'0..{num_classes - 1} for {num_classes} classes')
    tp = np.bincount(pred_labels[match.pred_tp], minlength=num_classes)
    fp = np.bincount(pred_labels[match.kept & ~match.pred_tp], minlength=num_classes)
    fn = np.bincount(gt_labels[~match.gt_matched], minlength=num_classes)
    return tp, fp, fn


def error_kinds(match: ImageMatch, pred_bboxes, pred_labels, gt_bboxes, gt_labels,
                iou_thr: float = 0.5, radius: Optional[float] = None) -> np.ndarray:
    """What each detection of a matched image is: an index into :data:`ERROR_KINDS`.

    A true positive is ``'tp'``. A false positive is, in this order of precedence,
    ``'duplicate'`` (it passes the criterion with a ground truth of its class, already
    matched by a higher-scoring detection), ``'class'`` (it passes the criterion with a
    ground truth of another class only), ``'box'`` (IoU in [0.1, ``iou_thr``) with a
    ground truth: a wrong box of a cell, too large, too small or shifted; never with
    ``radius``) or ``'background'`` (none of these).

    Returns:
        (N,) int array; not-``kept`` detections are classified all the same.
    """
    pred_bboxes = np.asarray(pred_bboxes, dtype=np.float64).reshape(-1, 4)
    gt_bboxes = np.asarray(gt_bboxes, dtype=np.float64).reshape(-1, 4)
    same_class = (np.asarray(pred_labels).reshape(-1)[:, None]
                  == np.asarray(gt_labels).reshape(-1)[None, :])
    if radius is None:
        overlap = box_iou(pred_bboxes, gt_bboxes)
        passes, near = overlap >= iou_thr, overlap >= BOX_ERROR_IOU
    else:
        passes = centre_distance(pred_bboxes, gt_bboxes) <= radius
        near = np.zeros_like(passes)
    kinds = np.full(len(pred_bboxes), ERROR_KINDS.index('background'))
    for kind, found in (('box', near), ('class', passes & ~same_class),
                        ('duplicate', passes & same_class)):
        kinds[found.any(axis=1)] = ERROR_KINDS.index(kind)
    kinds[match.pred_tp] = ERROR_KINDS.index('tp')
    return kinds
