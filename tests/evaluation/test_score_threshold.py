"""PU score threshold selection (Lee & Liu's r^2 / Pr[f(x)=1], the labeled recall at
its lower confidence bound) and its use in the metric."""
import json
from statistics import NormalDist

import numpy as np
import pytest
import torch
from mmengine.structures import InstanceData

from mmdet_pu.evaluation import CellDetMetric
from mmdet_pu.evaluation.score_threshold import (point_estimate_thr, pu_threshold_criterion,
                                                 recall_lower_bound, select_score_thr)
from mmdet_pu.evaluation.validation_thr import validation_score_thr
from mmdet_pu.prior.selection import read_val_metrics

CANDIDATES = [0.3, 0.5, 0.7, 0.9]


def test_criterion_is_recall_squared_over_detections_per_image():
    tp = np.array([[4, 4, 3, 1]])
    detections = np.array([[40, 20, 10, 2]])
    criterion = pu_threshold_criterion(tp, detections, num_gt=[4], num_images=2)
    expected = np.array([1 / 20, 1 / 10, (3 / 4) ** 2 / 5, (1 / 4) ** 2 / 1])
    np.testing.assert_allclose(criterion[0], expected)
    assert select_score_thr(CANDIDATES, criterion) == 0.7


@pytest.mark.parametrize('tp, num_gt', [(12, 15), (2, 15), (15, 15), (40, 400), (1, 3)])
@pytest.mark.parametrize('confidence', [0.8, 0.95])
def test_recall_lower_bound_is_the_score_test_limit(tp, num_gt, confidence):
    """Wilson's bound p is the smallest recall the one-sided score test at ``confidence``
    does not reject: (r - p) / sqrt(p (1 - p) / n) = z, with p below r."""
    z = NormalDist().inv_cdf(confidence)
    p = recall_lower_bound([[tp]], [num_gt], confidence)[0, 0]
    r = tp / num_gt
    assert 0 < p < r
    assert (r - p) / np.sqrt(p * (1 - p) / num_gt) == pytest.approx(z)


def test_recall_lower_bound_edges():
    bound = recall_lower_bound([[0, 5, 10**6], [1, 1, 1]], [10**6, 0], 0.95)
    assert bound[0, 0] == 0  # nothing found: nothing established
    assert bound[0, 2] == pytest.approx(1, abs=1e-5)  # many cells: the point estimate
    assert 0 < bound[0, 1] < 5e-6
    assert np.isnan(bound[1]).all()  # no labeled cells
    assert recall_lower_bound([[12]], [15], 0.99) < recall_lower_bound([[12]], [15], 0.8)
    with pytest.raises(ValueError, match='confidence'):
        recall_lower_bound([[1]], [2], 1.0)


def test_the_bound_does_not_prefer_a_lucky_few():
    """16 images, 15 labeled cells. At 0.5 the detector finds 12 of them with 6
    detections per image; at 0.7 it keeps two detections, both on labeled cells. The
    point estimate prefers 0.7 ((2/15)^2 / (2/16) = 0.142 against 0.107); 2 of 15 is
    little evidence of recall, and the bound keeps 0.5."""
    tp, detections = [[12, 2]], [[96, 2]]
    point = pu_threshold_criterion(tp, detections, num_gt=[15], num_images=16)
    bounded = pu_threshold_criterion(tp, detections, num_gt=[15], num_images=16,
                                     confidence=0.95)
    assert select_score_thr([0.5, 0.7], point) == 0.7
    assert select_score_thr([0.5, 0.7], bounded) == 0.5
    np.testing.assert_allclose(
        bounded[0], recall_lower_bound(tp, [15], 0.95)[0] ** 2 / (np.array([96, 2]) / 16))


def test_classes_are_normalised_and_empty_cases_handled():
    # class 0 prefers 0.5, class 1 (many more cells, larger raw values) prefers 0.7;
    # normalised, 0.5 loses less for class 1 than 0.7 for class 0 (0.95 + 1 > 1 + 0.5)
    criterion = np.array([[0.1, 1.0, 0.5, 0.0], [5.0, 9.5, 10.0, 1.0]])
    assert select_score_thr(CANDIDATES, criterion) == 0.5
    # a class without labeled cells (NaN) does not vote
    with_missing = np.vstack([criterion[:1], np.full((1, 4), np.nan)])
    assert select_score_thr(CANDIDATES, with_missing) == 0.5
    # nothing found at any threshold: no choice
    assert select_score_thr(CANDIDATES, np.zeros((2, 4))) is None
    nan_row = pu_threshold_criterion([[0, 0, 0, 0]], [[0, 0, 0, 0]], [0], 3)
    assert np.isnan(nan_row).all()


def _sample(pred_boxes, scores, gt_boxes):
    pred = InstanceData(bboxes=torch.tensor(pred_boxes, dtype=torch.float32).reshape(-1, 4),
                        scores=torch.tensor(scores, dtype=torch.float32),
                        labels=torch.zeros(len(scores), dtype=torch.long))
    gt = InstanceData(bboxes=torch.tensor(gt_boxes, dtype=torch.float32).reshape(-1, 4),
                      labels=torch.zeros(len(gt_boxes), dtype=torch.long))
    return dict(pred_instances=pred, gt_instances=gt, img_id=0, img_path='x.png')


@pytest.mark.parametrize('confidence', [None, 0.95])
def test_metric_selects_the_threshold_from_incomplete_labels(tmp_path, confidence):
    """Three cells per image (scores 0.95, 0.8, 0.8), one of them labeled, picked at
    random as PU learning assumes; two background detections (0.6). 0.7 keeps every cell
    and drops the background: r = 1, 3 detections per image, J = 1/3, more than at 0.5
    (1/5) or at 0.9 (r = 1/3, J = 1/9); the recall's lower bound (3 labeled cells)
    scales J down, most at 0.9, and keeps the choice."""
    metric = CellDetMetric(score_thr_candidates=CANDIDATES, out_dir=str(tmp_path),
                           score_thr_confidence=confidence)
    metric.dataset_meta = dict(classes=('cell', ))
    cells = [[10, 10, 30, 30], [50, 50, 70, 70], [90, 90, 110, 110]]
    background = [[130, 10, 150, 30], [10, 130, 30, 150]]
    scores = [0.95, 0.8, 0.8, 0.6, 0.6]
    metric.process({}, [_sample(cells + background, scores, [cells[k]]) for k in range(3)])
    metrics = metric.compute_metrics(metric.results)

    assert metrics['pu_score_thr'] == 0.7
    assert metrics['avg_recall'] == 1.0  # the metric itself still uses score_thr=0.5
    report = json.loads((tmp_path / 'test_per_image.json').read_text())
    selection = report['score_thr_selection']
    assert selection['candidates'] == CANDIDATES and selection['chosen'] == 0.7
    assert selection['confidence'] == confidence
    assert selection['chosen_point'] == point_estimate_thr(report) == 0.7
    recall = np.array([1, 1, 1, 1 / 3]) if confidence is None else \
        recall_lower_bound([[3, 3, 3, 1]], [3], confidence)[0]
    np.testing.assert_allclose(selection['criterion'][0],
                               recall ** 2 / np.array([5, 5, 3, 1]))


def test_the_bound_and_the_point_estimate_choose_apart_in_one_dump(tmp_path):
    """The lucky few of :func:`test_the_bound_does_not_prefer_a_lucky_few` as a
    validation: 16 images, one labeled cell on 15 of them, six detections per image at
    0.6, two of them on labeled cells at 0.8 instead. At 0.5: 12 of 15 labeled cells, 6
    detections per image; at 0.7: 2 of 15, 2 detections. The dump's threshold, which a
    test takes (--score-thr val), is the bound's 0.5; the point estimate's 0.7, which the
    prior selection and the pseudo-labels' cut read, is kept beside it."""
    run_dir = tmp_path / 'run'
    metric = CellDetMetric(score_thr_candidates=[0.5, 0.7],
                           out_dir=str(run_dir / 'cell_metrics'))
    metric.dataset_meta = dict(classes=('cell', ))
    cell = [10, 10, 30, 30]
    background = [[10 + 30 * k, 130, 30 + 30 * k, 150] for k in range(6)]
    samples = []
    for image in range(16):
        found = image < 12  # the detector finds the labeled cell of images 0-11
        boxes = [cell] + background[:5] if found else background
        scores = [0.8 if image < 2 else 0.6] + [0.6] * 5 if found else [0.6] * 6
        samples.append(_sample(boxes, scores, [cell] if image < 15 else []))
    metric.process({}, samples)
    assert metric.compute_metrics(metric.results)['pu_score_thr'] == 0.5
    (run_dir / 'cell_metrics' / 'test_per_image.json').rename(
        run_dir / 'cell_metrics' / 'val_per_image.json')

    report = json.loads((run_dir / 'cell_metrics' / 'val_per_image.json').read_text())
    selection = report['score_thr_selection']
    assert (selection['chosen'], selection['chosen_point']) == (0.5, 0.7)
    assert validation_score_thr(str(run_dir / 'iter_2.pth')) == 0.5
    val = read_val_metrics(str(run_dir))
    assert (val['pu_score_thr'], val['pu_score_thr_point']) == (0.5, 0.7)
    assert val['counts']['tp'].tolist() == [12] and val['counts']['num_gt'].tolist() == [15]


def test_the_point_estimates_choice_is_read_from_old_and_new_dumps():
    new = dict(candidates=CANDIDATES, confidence=0.95, chosen=0.5, chosen_point=0.9)
    assert point_estimate_thr(dict(score_thr_selection=new)) == 0.9
    # written before the bound: the choice was the point estimate's
    old = dict(candidates=CANDIDATES, chosen=0.7)
    assert point_estimate_thr(dict(score_thr_selection=old)) == 0.7
    assert point_estimate_thr(dict(score_thr_selection=dict(new, chosen_point=None))) is None
    assert point_estimate_thr(dict(score_thr_selection=None)) is None


def test_metric_defaults_to_the_95_percent_bound():
    assert CellDetMetric(score_thr_candidates=CANDIDATES).score_thr_confidence == 0.95
    with pytest.raises(ValueError, match='score_thr_confidence'):
        CellDetMetric(score_thr_candidates=CANDIDATES, score_thr_confidence=1.5)


@pytest.mark.parametrize('candidates', [[], [0.5, 0.3], [0.2, 1.5], [0.5, 0.5]])
def test_bad_candidates_are_refused(candidates):
    with pytest.raises(ValueError, match='score_thr_candidates'):
        CellDetMetric(score_thr_candidates=candidates)
