"""PU score threshold selection (Lee & Liu's r^2 / Pr[f(x)=1]) and its use in the metric."""
import json

import numpy as np
import pytest
import torch
from mmengine.structures import InstanceData

from mmdet_pu.evaluation import CellDetMetric
from mmdet_pu.evaluation.score_threshold import pu_threshold_criterion, select_score_thr

CANDIDATES = [0.3, 0.5, 0.7, 0.9]


def test_criterion_is_recall_squared_over_detections_per_image():
    tp = np.array([[4, 4, 3, 1]])
    detections = np.array([[40, 20, 10, 2]])
    criterion = pu_threshold_criterion(tp, detections, num_gt=[4], num_images=2)
    expected = np.array([1 / 20, 1 / 10, (3 / 4) ** 2 / 5, (1 / 4) ** 2 / 1])
    np.testing.assert_allclose(criterion[0], expected)
    assert select_score_thr(CANDIDATES, criterion) == 0.7


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


def test_metric_selects_the_threshold_from_incomplete_labels(tmp_path):
    """Three cells per image (scores 0.95, 0.8, 0.8), one of them labeled, picked at
    random as PU learning assumes; two background detections (0.6). 0.7 keeps every cell
    and drops the background: r = 1, 3 detections per image, J = 1/3, more than at 0.5
    (1/5) or at 0.9 (r = 1/3, J = 1/9)."""
    metric = CellDetMetric(score_thr_candidates=CANDIDATES, out_dir=str(tmp_path))
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
    np.testing.assert_allclose(selection['criterion'][0], [1 / 5, 1 / 5, 1 / 3, 1 / 9])


@pytest.mark.parametrize('candidates', [[], [0.5, 0.3], [0.2, 1.5], [0.5, 0.5]])
def test_bad_candidates_are_refused(candidates):
    with pytest.raises(ValueError, match='score_thr_candidates'):
        CellDetMetric(score_thr_candidates=candidates)
