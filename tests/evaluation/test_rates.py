"""Rates from ranked detections: counts at any threshold and all-point AP."""
import numpy as np
import pytest

from mmdet_pu.evaluation.matching import count_per_class, match_image
from mmdet_pu.evaluation.rates import average_precision, counts_at


def test_average_precision_by_hand():
    # 3 cells; ranked TP, FP, TP, FP: recall 1/3 at precision 1, 2/3 at precision 2/3
    assert average_precision([0.9, 0.8, 0.6, 0.2], [1, 0, 1, 0], 3) == pytest.approx(5 / 9)
    # the envelope: a later, higher precision lifts the earlier recall steps
    assert average_precision([0.9, 0.8, 0.7], [0, 1, 1], 2) == pytest.approx(2 / 3)
    assert average_precision([0.9, 0.8], [1, 1], 2) == 1.0
    assert average_precision([], [], 4) == 0.0
    assert np.isnan(average_precision([0.9], [0], 0))  # no cell: undefined
    # order of the input does not matter; tied scores enter together
    assert average_precision([0.2, 0.9, 0.6, 0.8], [0, 1, 1, 0], 3) == pytest.approx(5 / 9)
    assert average_precision([0.5, 0.5], [0, 1], 1) == average_precision([0.5, 0.5],
                                                                         [1, 0], 1) == 0.5


def test_weighted_detections_count_as_often_as_their_weight():
    scores, matched = [0.9, 0.8, 0.6, 0.2], [1, 0, 1, 0]
    # weight 2 on every detection and the cells: the same curve
    assert average_precision(scores, matched, 6, weights=[2, 2, 2, 2]) == pytest.approx(
        average_precision(scores, matched, 3))
    # the first TP twice: as if it were listed twice (with two cells behind it)
    assert average_precision(scores, matched, 4, weights=[2, 1, 1, 1]) == pytest.approx(
        average_precision([0.9, 0.9, 0.8, 0.6, 0.2], [1, 1, 0, 1, 0], 4))
    # weight 0 drops a detection: no precision of an empty set before it
    assert average_precision(scores, matched, 2, weights=[0, 1, 1, 1]) == pytest.approx(
        average_precision([0.8, 0.6, 0.2], [0, 1, 0], 2))


def test_counts_at_a_threshold_equal_matching_at_that_threshold():
    """Greedy matching in score order: matching every detection once gives the counts of
    matching only those above any threshold."""
    rng = np.random.default_rng(0)
    matched = 0
    for _ in range(30):
        n, m, classes = rng.integers(0, 25), rng.integers(0, 15), 3
        pred, gt = (np.concatenate([xy, xy + 12], axis=1)
                    for xy in (rng.uniform(0, 60, (n, 2)), rng.uniform(0, 60, (m, 2))))
        scores = rng.choice([0.1, 0.3, 0.5, 0.7, 0.9], n)  # with ties
        pred_labels, gt_labels = rng.integers(0, classes, n), rng.integers(0, classes, m)
        full = match_image(pred, scores, pred_labels, gt, gt_labels, score_thr=-np.inf,
                           iou_thr=0.3)
        tp_all, _, fn_all = count_per_class(full, pred_labels, gt_labels, classes)
        matched += tp_all.sum()
        for thr in (0.0, 0.3, 0.5, 0.9, 1.0):
            direct = count_per_class(match_image(pred, scores, pred_labels, gt, gt_labels,
                                                 score_thr=thr, iou_thr=0.3),
                                     pred_labels, gt_labels, classes)
            derived = counts_at(scores, pred_labels, full.pred_tp, tp_all + fn_all, thr,
                                classes)
            for a, b in zip(direct, derived):
                assert a.tolist() == b.tolist()
    assert matched >= 20  # the case is not trivial
