"""Score threshold selection on validation data with incomplete labels.

Precision cannot be measured on a validation set where only some cells are annotated:
every unannotated cell the detector finds counts as a false positive. Lee & Liu (ICML
2003, "Learning with positive and unlabeled examples using weighted logistic
regression", Section 4) give a criterion that needs only the labeled positives:

    J(t) = r(t)^2 / Pr[f_t(x) = 1] = r(t) * p(t) / Pr[y = 1]

where ``r(t)`` is the recall of the detector thresholded at ``t`` on the labeled cells
(an unbiased estimate of the recall on all cells when the labeled cells are a random
sample of them, the SCAR assumption of PU learning), ``p(t)`` its precision and
``Pr[f_t(x) = 1]`` the rate of positive decisions. ``Pr[y = 1]`` does not depend on
``t``, so maximising ``J`` maximises ``r(t) p(t)``, the product whose square root is the
geometric mean of precision and recall, without knowing how many cells are unannotated.
For detection the rate of positive decisions is the number of detections per image.

With several classes each class's criterion is divided by its maximum over the
candidates (so that classes with more cells do not dominate) and the threshold with the
largest mean over the classes that have labeled cells is chosen. Ties go to the lower
threshold. The metric reports the choice as ``<prefix>/pu_score_thr`` in the validation
dump, which :func:`read_validation_thr` reads back.
"""
import json
import math
from typing import Optional, Sequence

import numpy as np


def pu_threshold_criterion(tp: np.ndarray, detections: np.ndarray, num_gt: np.ndarray,
                           num_images: int) -> np.ndarray:
    """Lee & Liu's ``r^2 / Pr[f(x) = 1]`` per class and candidate threshold.

    Args:
        tp: ``(C, T)`` labeled cells matched by a detection at each threshold, summed
            over the images.
        detections: ``(C, T)`` detections kept at each threshold, summed over images.
        num_gt: ``(C,)`` labeled cells per class.
        num_images: images evaluated.

    Returns:
        ``(C, T)`` criterion; 0 where nothing is detected, NaN for classes without
        labeled cells.
    """
    tp = np.asarray(tp, dtype=np.float64)
    detections = np.asarray(detections, dtype=np.float64)
    num_gt = np.asarray(num_gt, dtype=np.float64)[:, None]
    recall = np.divide(tp, num_gt, out=np.full(tp.shape, np.nan), where=num_gt > 0)
    rate = detections / max(num_images, 1)
    criterion = np.divide(recall ** 2, rate, out=np.zeros(tp.shape), where=rate > 0)
    criterion[np.isnan(recall)] = np.nan
    return criterion


def normalised_criterion(criterion: np.ndarray) -> Optional[np.ndarray]:
    """``(T,)`` per candidate: the mean over the classes with a positive criterion of
    each class's criterion divided by its maximum over the candidates (1 = the best
    candidate of every class).

    Returns None when no class has a detection that matches a labeled cell at any
    candidate (the criterion is 0 everywhere): nothing to choose from.
    """
    criterion = np.asarray(criterion, dtype=np.float64)
    best = np.nanmax(criterion, axis=1, initial=0.0) if criterion.size else np.zeros(0)
    valid = best > 0
    if not valid.any():
        return None
    return (criterion[valid] / best[valid, None]).mean(axis=0)


def select_score_thr(candidates: Sequence[float], criterion: np.ndarray) -> Optional[float]:
    """The candidate with the largest :func:`normalised_criterion` (the first on ties).

    Returns None when there is nothing to choose from (see there).
    """
    scores = normalised_criterion(criterion)
    return None if scores is None else float(candidates[int(np.argmax(scores))])


def read_validation_thr(dump: str) -> Optional[float]:
    """The threshold a validation dump of ``CellDetMetric`` selected (``pu_score_thr``).

    Returns None when it selected none: no candidate found a labeled cell, or the
    validation metric had no candidates.

    Raises:
        OSError: the dump cannot be read.
    """
    with open(dump) as f:
        metrics = json.load(f)['metrics']
    value = next((v for k, v in metrics.items() if k.split('/')[-1] == 'pu_score_thr'),
                 None)
    return None if value is None or math.isnan(value) else float(value)
