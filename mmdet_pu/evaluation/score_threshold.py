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

The recall comes from the labeled cells alone, often a handful on a validation split
(about 15 on each real fold of docs/experiments.md). At a high threshold two detections
that hit two of 15 labeled cells give ``r^2 / Pr = (2/15)^2 / (2/16)``, more than a
threshold that finds 12 of the 15 with six detections per image: the point estimate
prefers the lucky few. The metric therefore maximises ``J`` with the recall replaced by
its one-sided Wilson score lower bound at ``confidence`` (0.95 in
:class:`~mmdet_pu.evaluation.CellDetMetric`),

    r_lo = (r + z^2/2n - z sqrt(r(1 - r)/n + z^2/4n^2)) / (1 + z^2/n),   z = Phi^-1(confidence)

with ``n`` the labeled cells of the class: a recall measured on few cells counts only
for what those cells establish, and with many labeled cells ``r_lo`` tends to ``r`` and
the choice to Lee & Liu's. ``confidence=None`` is the point estimate: the prior selection of
:mod:`mmdet_pu.prior.selection` (which compares runs at one threshold) and the
pseudo-labels' cut of the own-data workflow (:func:`point_estimate_thr`) keep it.

With several classes each class's criterion is divided by its maximum over the
candidates (so that classes with more cells do not dominate) and the threshold with the
largest mean over the classes that have labeled cells is chosen. Ties go to the lower
threshold. The metric reports the choice as ``<prefix>/pu_score_thr`` in the validation
dump, which :func:`.metric_dump.read_validation_thr` reads back.
"""
from statistics import NormalDist
from typing import Optional, Sequence

import numpy as np


def recall_lower_bound(tp: np.ndarray, num_gt: np.ndarray, confidence: float) -> np.ndarray:
    """One-sided Wilson score lower bound of the recall ``tp / num_gt`` at ``confidence``.

    Args:
        tp: ``(C, T)`` labeled cells matched at each candidate threshold.
        num_gt: ``(C,)`` labeled cells per class.
        confidence: in (0, 1).

    Returns:
        ``(C, T)`` bounds in [0, 1]; NaN for classes without labeled cells.
    """
    if not 0 < confidence < 1:
        raise ValueError(f'confidence must be in (0, 1), got {confidence}')
    z = NormalDist().inv_cdf(confidence)
    tp = np.asarray(tp, dtype=np.float64)
    n = np.broadcast_to(np.asarray(num_gt, dtype=np.float64)[:, None], tp.shape)
    bound = np.full(tp.shape, np.nan)
    has = n > 0
    r, m = tp[has] / n[has], n[has]
    spread = z * np.sqrt(r * (1 - r) / m + z * z / (4 * m * m))
    bound[has] = np.clip((r + z * z / (2 * m) - spread) / (1 + z * z / m), 0.0, 1.0)
    return bound


def pu_threshold_criterion(tp: np.ndarray, detections: np.ndarray, num_gt: np.ndarray,
                           num_images: int, confidence: Optional[float] = None) -> np.ndarray:
    """Lee & Liu's ``r^2 / Pr[f(x) = 1]`` per class and candidate threshold.

    Args:
        tp: ``(C, T)`` labeled cells matched by a detection at each threshold, summed
            over the images.
        detections: ``(C, T)`` detections kept at each threshold, summed over images.
        num_gt: ``(C,)`` labeled cells per class.
        num_images: images evaluated.
        confidence: with a value in (0, 1), ``r`` is :func:`recall_lower_bound` at that
            confidence; None (default) is the point estimate ``tp / num_gt``.

    Returns:
        ``(C, T)`` criterion; 0 where nothing is detected, NaN for classes without
        labeled cells.
    """
    tp = np.asarray(tp, dtype=np.float64)
    detections = np.asarray(detections, dtype=np.float64)
    num_gt = np.asarray(num_gt, dtype=np.float64)
    if confidence is None:
        recall = np.divide(tp, num_gt[:, None], out=np.full(tp.shape, np.nan),
                           where=num_gt[:, None] > 0)
    else:
        recall = recall_lower_bound(tp, num_gt, confidence)
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


def point_estimate_thr(report: dict) -> Optional[float]:
    """The threshold Lee & Liu's point estimate selected in the validation dump
    ``report`` (loaded JSON of ``CellDetMetric``): its ``chosen_point``; in a dump written
    before the lower bound (no ``confidence``), its ``chosen``. None when it selected
    none or the dump has no selection."""
    selection = report.get('score_thr_selection') or {}
    value = selection['chosen_point'] if 'chosen_point' in selection else \
        None if 'confidence' in selection else selection.get('chosen')
    return None if value is None else float(value)
