"""Detection rates: recall, precision and F1 from counts, and AP from ranked detections.

From TP/FP/FN counts (docs/method.md#metrics)::

    recall = TP / (TP + FN),   precision = TP / (TP + FP),   F1 = 2 TP / (2 TP + FP + FN)

(NaN where a denominator is zero).

*Ranked detections* are every detection of a set of images with its score, class and
whether the greedy matching of all detections (:func:`~.matching.match_image` with no
score threshold) made it a TP. Matching visits the detections in descending score order,
so matching only those with ``score >= t`` pairs them exactly as matching all of them
does: :func:`counts_at` gives the counts at any threshold ``t`` from the ranked
detections, and :func:`average_precision` ranks them.
"""
from typing import Tuple

import numpy as np

#: The rates of :func:`detection_rates`, in the order of the paper's tables.
RATES = ('recall', 'precision', 'f1')


def detection_rates(tp, fp, fn):
    """Recall, precision and F1 from TP/FP/FN counts of any (matching) shape.

    Returns:
        dict ``{'recall', 'precision', 'f1'}`` of float arrays, NaN where undefined.
    """
    tp, fp, fn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn))

    def ratio(num, den):
        return np.divide(num, den, out=np.full(np.shape(num), np.nan), where=den > 0)

    return dict(recall=ratio(tp, tp + fn), precision=ratio(tp, tp + fp),
                f1=ratio(2 * tp, 2 * tp + fp + fn))


def nanmean(values, axis=None):
    """Mean over the defined (non-NaN) values; NaN, without a warning, if there are none."""
    values = np.asarray(values, dtype=np.float64)
    count = np.sum(~np.isnan(values), axis=axis)
    total = np.nansum(values, axis=axis)
    return np.divide(total, count, out=np.full(np.shape(total), np.nan), where=count > 0)


def counts_at(scores, labels, matched, num_gt, score_thr: float,
              num_classes: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TP, FP and FN per class of the ranked detections with ``score >= score_thr``.

    Args:
        scores, labels, matched: (N,) scores, classes and TP flags of the detections.
        num_gt: (num_classes,) ground-truth cells per class.
        score_thr: the threshold.
        num_classes: C.

    Returns:
        Three (C,) int arrays ``tp, fp, fn``.
    """
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    labels = np.asarray(labels, dtype=np.int64).reshape(-1)
    matched = np.asarray(matched, dtype=bool).reshape(-1)
    kept = scores >= score_thr
    tp = np.bincount(labels[kept & matched], minlength=num_classes)
    fp = np.bincount(labels[kept & ~matched], minlength=num_classes)
    return tp, fp, np.asarray(num_gt, dtype=np.int64) - tp


def average_precision(scores, matched, num_gt: float, weights=None) -> float:
    """All-point interpolated average precision of one class's ranked detections.

    With recall ``r_k`` and precision ``p_k`` of the detections kept at the k-th largest
    distinct score (tied scores enter together) and ``r_0 = 0``::

        AP = sum_k (r_k - r_{k-1}) max_{j >= k} p_j

    the area under the precision-recall curve made monotone (VOC 2010 onwards). Cells
    no detection matches lower the final recall, so they lower AP. With ``weights``
    each detection counts that many times (a bootstrap resample's multiplicity of its
    image, :mod:`.paired_bootstrap`; ``num_gt`` then the weighted cells).

    Args:
        scores: (N,) scores of the class's detections.
        matched: (N,) whether each is a TP.
        num_gt: ground-truth cells of the class.
        weights: (N,) counts >= 0 of the detections (default: 1 each).

    Returns:
        AP in [0, 1]; NaN without ground truth (undefined), 0 with ground truth and no
        detection.
    """
    if num_gt <= 0:
        return float('nan')
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    matched = np.asarray(matched, dtype=bool).reshape(-1)
    if not scores.size:
        return 0.0
    weights = (np.ones_like(scores) if weights is None
               else np.asarray(weights, dtype=np.float64).reshape(-1))
    order = np.argsort(-scores, kind='stable')
    scores, matched, weights = scores[order], matched[order], weights[order]
    tp = np.cumsum(weights * matched)
    kept = np.cumsum(weights)
    last = np.append(scores[1:] != scores[:-1], True)  # last detection of a tie group
    recall = tp[last] / num_gt
    precision = np.divide(tp[last], kept[last], out=np.zeros(int(last.sum())),
                          where=kept[last] > 0)
    envelope = np.maximum.accumulate(precision[::-1])[::-1]
    return float(np.sum(np.diff(recall, prepend=0.0) * envelope))
