"""Finding cells and classifying them, measured apart (docs/method.md#metrics).

A multi-class detector scores a location once per class (mmdet's per-class NMS), so one
nucleus may come out as an epithelial box at 0.4 and a fibroblast box at 0.3, and a
class's F1 and AP mix two questions: was the nucleus found, and was it given its class.
With the classes merged, the highest-scoring detection of each location stands for it
(:func:`merge_classes`). Matched against every cell whatever its class, these detections
say how well cells are *found* (recall, precision, F1 and AP of the merged detections);
the labels of the found cells against their true classes say how well they are
*classified* (a confusion matrix and the accuracy of the found cells), as nuclei-typing
benchmarks report detection and classification apart.
"""
from typing import Optional

import numpy as np

from .matching import box_iou, centre_distance, dont_care, match_image


def merge_classes(bboxes, scores, iou_thr: float = 0.5,
                  radius: Optional[float] = None) -> np.ndarray:
    """Indices of the detections that stand for their location, whatever their class.

    Greedy in descending score (ties: the lower index first): a detection is dropped
    when it passes the matching criterion (IoU ``>= iou_thr``, or centre distance ``<=
    radius``) with one already kept.

    Returns:
        (K,) int array of indices into the detections, in descending score.
    """
    bboxes = np.asarray(bboxes, dtype=np.float64).reshape(-1, 4)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    dropped = np.zeros(len(scores), dtype=bool)
    kept = []
    for i in np.argsort(-scores, kind='stable'):
        if not dropped[i]:
            kept.append(i)
            # one row at a time: a whole tiled image holds thousands of detections
            box = bboxes[i:i + 1]
            dropped |= (box_iou(box, bboxes)[0] >= iou_thr if radius is None
                        else centre_distance(box, bboxes)[0] <= radius)
    return np.asarray(kept, dtype=np.int64)


def match_classes_merged(pred_bboxes, pred_scores, pred_labels, gt_bboxes, gt_labels,
                         ignored_bboxes=None, iou_thr: float = 0.5,
                         radius: Optional[float] = None) -> dict:
    """Match one image's detections, classes merged (:func:`merge_classes`), to all its
    cells whatever their class; detections of ignored regions are left out
    (:func:`~mmdet_pu.evaluation.matching.dont_care`).

    Returns:
        dict: ``scores`` (descending), ``labels`` (the predicted class) and
        ``true_labels`` (the class of the cell each detection found, -1 for a false
        positive) of the merged detections, every score kept.
    """
    pred_bboxes = np.asarray(pred_bboxes, dtype=np.float64).reshape(-1, 4)
    gt_labels = np.asarray(gt_labels, dtype=np.int64).reshape(-1)
    kept = merge_classes(pred_bboxes, pred_scores, iou_thr, radius)
    bboxes = pred_bboxes[kept]
    scores = np.asarray(pred_scores, dtype=np.float64).reshape(-1)[kept]
    labels = np.asarray(pred_labels, dtype=np.int64).reshape(-1)[kept]
    match = match_image(bboxes, scores, np.zeros(len(kept), np.int64), gt_bboxes,
                        np.zeros(len(gt_labels), np.int64), score_thr=-np.inf,
                        iou_thr=iou_thr, radius=radius)
    counted = ~dont_care(match, bboxes, np.zeros((0, 4)) if ignored_bboxes is None
                         else ignored_bboxes, iou_thr, radius)
    true_labels = np.full(len(kept), -1, dtype=np.int64)
    true_labels[match.pred_tp] = gt_labels[match.pred_gt[match.pred_tp]]
    return dict(scores=scores[counted], labels=labels[counted],
                true_labels=true_labels[counted])


def confusion_matrix(merged: list, score_thr: float, num_classes: int) -> np.ndarray:
    """``(C, C)`` counts of the cells found at ``score_thr`` (:func:`match_classes_merged`
    of each image): rows their true class, columns the class they were given."""
    matrix = np.zeros((num_classes, num_classes), dtype=np.int64)
    for image in merged:
        found = (image['scores'] >= score_thr) & (image['true_labels'] >= 0)
        np.add.at(matrix, (image['true_labels'][found], image['labels'][found]), 1)
    return matrix
