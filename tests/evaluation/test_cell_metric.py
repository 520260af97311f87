"""Matching (IoU and radius), per-image vs pooled metrics and edge cases of CellDetMetric."""
import json
import math

import numpy as np
import pytest
import torch
from mmengine.evaluator import Evaluator
from mmengine.structures import InstanceData

from mmdet.registry import METRICS
from mmdet.structures import DetDataSample
from mmdet.structures.bbox import HorizontalBoxes
from mmdet_pu.evaluation import CellDetMetric, count_per_class, match_image
from mmdet_pu.evaluation.cell_metric import detection_rates, dump_metric
from mmdet_pu.evaluation.matching import (ERROR_KINDS, box_iou, dont_care, error_kinds,
                                          to_numpy)


def box(x, y, w=10, h=10):
    return [x, y, x + w, y + h]


# ---------------------------------------------------------------- matching


def test_box_iou_by_hand():
    # overlap 5x10 = 50, union 150
    assert box_iou([box(0, 0)], [box(5, 0)])[0, 0] == pytest.approx(50 / 150)
    assert box_iou([box(0, 0)], [box(20, 0)])[0, 0] == 0
    assert box_iou(np.zeros((0, 4)), [box(0, 0)]).shape == (0, 1)


def test_greedy_by_score_not_by_overlap():
    gt = [box(0, 0)]
    # pred 0 (score 0.8) overlaps best, but pred 1 (score 0.9) comes first and passes
    preds = [box(0, 0), box(2, 0)]  # IoU 1.0 and 80/120
    m = match_image(preds, [0.8, 0.9], [0, 0], gt, [0])
    assert m.pred_tp.tolist() == [False, True]
    assert m.gt_matched.tolist() == [True]


def test_best_unmatched_gt_is_taken_and_failed_pair_frees_the_gt():
    gt = [box(0, 0), box(3, 0)]
    preds = [box(3, 0),   # 0.9: IoU 1.0 with gt1, 70/130 with gt0 -> gt1
             box(1, 0),   # 0.8: IoU 90/110 gt0 -> gt0
             box(6, 0)]   # 0.7: both gt taken -> FP
    m = match_image(preds, [0.9, 0.8, 0.7], [0, 0, 0], gt, [0, 0])
    assert m.pred_tp.tolist() == [True, True, False]
    assert m.gt_matched.all()

    # the best pair of the first prediction fails (IoU 1/3): FP, gt stays for the next
    m = match_image([box(5, 0), box(1, 0)], [0.9, 0.8], [0, 0], [box(0, 0)], [0])
    assert m.pred_tp.tolist() == [False, True]


def test_iou_threshold_is_inclusive_and_scores_below_thr_are_ignored():
    gt = [box(0, 0, 10, 10)]
    half = [0, 0, 10, 5]  # IoU exactly 0.5
    assert match_image([half], [0.9], [0], gt, [0]).pred_tp.tolist() == [True]
    assert match_image([half], [0.9], [0], gt, [0], iou_thr=0.6).pred_tp.tolist() == [False]
    m = match_image([box(0, 0)], [0.49], [0], gt, [0])
    assert m.kept.tolist() == [False] and not m.pred_tp.any() and not m.gt_matched.any()
    tp, fp, fn = count_per_class(m, [0], [0], 1)
    assert (tp.tolist(), fp.tolist(), fn.tolist()) == ([0], [0], [1])  # not an FP


def test_labels_must_agree():
    m = match_image([box(0, 0)], [0.9], [1], [box(0, 0)], [0])
    tp, fp, fn = count_per_class(m, [1], [0], 2)
    assert tp.tolist() == [0, 0] and fp.tolist() == [0, 1] and fn.tolist() == [1, 0]


def test_radius_criterion_uses_centre_distance_not_iou():
    gt = [box(0, 0, 32, 32)]  # centre (16, 16)
    small = [13, 13, 19, 19]  # centre (16, 16): IoU 36/1024, distance 0
    assert not match_image([small], [0.9], [0], gt, [0]).pred_tp[0]
    assert match_image([small], [0.9], [0], gt, [0], radius=8).pred_tp[0]
    shifted = [s + d for s, d in zip(box(0, 0, 32, 32), [8, 0, 8, 0])]  # distance 8
    assert match_image([shifted], [0.9], [0], gt, [0], radius=8).pred_tp[0]
    assert not match_image([shifted], [0.9], [0], gt, [0], radius=7.9).pred_tp[0]
    # closest unmatched centre wins: gt1 is at distance 3, gt0 at 5
    m = match_image([box(5, 0)], [0.9], [0], [box(0, 0), box(8, 0)], [0, 0], radius=8)
    assert m.gt_matched.tolist() == [False, True]


def test_match_rejects_inconsistent_input():
    with pytest.raises(ValueError, match='2 boxes, 1 scores'):
        match_image([box(0, 0), box(1, 1)], [0.9], [0, 0], [], [])
    m = match_image([box(0, 0)], [0.9], [3], [], [])
    with pytest.raises(ValueError, match='label 3 out of range'):
        count_per_class(m, [3], [], 2)


# ---------------------------------------------------------------- rates


def test_detection_rates_definitions():
    rates = detection_rates([1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 3, 0])
    assert rates['recall'][0] == 1 and math.isnan(rates['recall'][1])
    assert rates['recall'][2] == 0 and math.isnan(rates['recall'][3])
    assert rates['precision'][1] == 0 and math.isnan(rates['precision'][2])
    assert rates['f1'].tolist()[:3] == [1, 0, 0] and math.isnan(rates['f1'][3])
    # F1 = harmonic mean of recall and precision when both are defined
    r = detection_rates(3, 1, 2)
    assert r['f1'] == pytest.approx(2 * (3 / 5) * (3 / 4) / (3 / 5 + 3 / 4))


# ---------------------------------------------------------------- metric


def sample(pred_boxes, scores, pred_labels, gt_boxes, gt_labels, img_id=0,
           ignored_boxes=None):
    """A DetDataSample as the test loop hands it to the evaluator (``ignored_boxes``:
    its ignored instances, as mmdet's PackDetInputs splits them off)."""
    s = DetDataSample(metainfo=dict(img_id=img_id, img_path=f'img{img_id}.png'))
    s.pred_instances = InstanceData(
        bboxes=torch.tensor(pred_boxes, dtype=torch.float32).reshape(-1, 4),
        scores=torch.tensor(scores, dtype=torch.float32),
        labels=torch.tensor(pred_labels, dtype=torch.int64))
    s.gt_instances = InstanceData(
        bboxes=HorizontalBoxes(torch.tensor(gt_boxes, dtype=torch.float32).reshape(-1, 4)),
        labels=torch.tensor(gt_labels, dtype=torch.int64))
    if ignored_boxes is not None:
        s.ignored_instances = InstanceData(
            bboxes=HorizontalBoxes(torch.tensor(ignored_boxes,
                                                dtype=torch.float32).reshape(-1, 4)),
            labels=torch.zeros(len(ignored_boxes), dtype=torch.int64))
    return s


def evaluate(samples, classes=('cell',), **kwargs):
    kwargs.setdefault('dump_per_image', 'out_dir' in kwargs)
    evaluator = Evaluator(CellDetMetric(**kwargs))
    evaluator.dataset_meta = dict(classes=classes)
    evaluator.process(samples)
    return evaluator.evaluate(len(samples))


def binary_images():
    """A: 1 GT found (R=P=F1=1). B: 3 GT, 1 FP (R=P=F1=0). C: nothing at all.
    D: no GT, 2 FP (R undefined, P=F1=0)."""
    return [
        sample([box(0, 0)], [0.9], [0], [box(0, 0)], [0], img_id=1),
        sample([box(50, 50)], [0.9], [0],
               [box(0, 0), box(20, 0), box(0, 20)], [0, 0, 0], img_id=2),
        sample([], [], [], [], [], img_id=3),
        sample([box(0, 0), box(30, 30)], [0.9, 0.7], [0, 0], [], [], img_id=4),
    ]


def test_per_image_average_vs_pooled_by_hand():
    m = evaluate(binary_images()[:2])
    assert m['cell/cell/avg_recall'] == pytest.approx(0.5)     # (1 + 0) / 2
    assert m['cell/cell/avg_precision'] == pytest.approx(0.5)  # (1 + 0) / 2
    assert m['cell/cell/avg_f1'] == pytest.approx(0.5)
    assert m['cell/cell/pooled_recall'] == pytest.approx(1 / 4)
    assert m['cell/cell/pooled_precision'] == pytest.approx(1 / 2)
    assert m['cell/cell/pooled_f1'] == pytest.approx(2 / (2 + 1 + 3))
    assert (m['cell/cell/tp'], m['cell/cell/fp'], m['cell/cell/fn']) == (1, 1, 3)
    assert m['cell/avg_recall'] == m['cell/cell/avg_recall']


def test_undefined_values_are_left_out_of_the_average():
    m = evaluate(binary_images())
    # C (empty) changes nothing; D adds precision 0 and F1 0 but no recall
    assert m['cell/cell/avg_recall'] == pytest.approx(0.5)
    assert m['cell/cell/avg_precision'] == pytest.approx(1 / 3)
    assert m['cell/cell/avg_f1'] == pytest.approx(1 / 3)
    assert m['cell/cell/pooled_precision'] == pytest.approx(1 / 4)


def test_all_images_empty_gives_nan_not_an_error():
    m = evaluate([sample([], [], [], [], [])])
    assert math.isnan(m['cell/avg_recall']) and math.isnan(m['cell/cell/pooled_f1'])
    metric = CellDetMetric(dump_per_image=False)
    metric.dataset_meta = dict(classes=('cell',))
    assert metric.compute_metrics([])['cell/tp'] == 0  # an empty dataset
    # predictions only: precision and F1 are 0, recall undefined
    m = evaluate([sample([box(0, 0)], [0.9], [0], [], [])])
    assert m['cell/avg_precision'] == 0 and m['cell/avg_f1'] == 0
    assert math.isnan(m['cell/avg_recall'])


def test_multi_class_names_and_class_mean():
    samples = [sample([box(0, 0), box(40, 40)], [0.9, 0.8], [0, 1],
                      [box(0, 0), box(40, 40), box(80, 80)], [0, 1, 1])]
    m = evaluate(samples, classes=('tumor', 'lymphocyte', 'stromal'))
    assert m['cell/tumor/avg_recall'] == 1
    assert m['cell/lymphocyte/avg_recall'] == 0.5
    assert math.isnan(m['cell/stromal/avg_recall'])  # no stromal cell at all
    assert m['cell/avg_recall'] == pytest.approx(0.75)  # mean over defined classes
    assert m['cell/pooled_precision'] == 1


def test_radius_and_score_thr_reach_the_matching():
    s = [sample([[13, 13, 19, 19]], [0.6], [0], [box(0, 0, 32, 32)], [0])]
    assert evaluate(s)['cell/avg_recall'] == 0
    assert evaluate(s, radius=8)['cell/avg_recall'] == 1
    assert evaluate(s, radius=8, score_thr=0.7)['cell/avg_recall'] == 0


def test_dump_per_image_json_and_csv(tmp_path):
    evaluate(binary_images(), out_dir=str(tmp_path))
    report = json.loads((tmp_path / 'test_per_image.json').read_text())
    assert report['classes'] == ['cell'] and report['iou_thr'] == 0.5
    assert report['prefix'] == 'cell'
    assert report['metrics']['cell/avg_recall'] == pytest.approx(0.5)  # as logged
    by_id = {image['img_id']: image for image in report['images']}
    assert by_id[2]['tp'] == [0] and by_id[2]['fn'] == [3] and by_id[2]['recall'] == [0]
    assert by_id[3]['recall'] == [None] and by_id[4]['precision'] == [0]
    assert by_id[1]['img_path'] == 'img1.png'
    rows = (tmp_path / 'test_per_image.csv').read_text().splitlines()
    assert rows[0] == 'img_id,img_path,class,tp,fp,fn,recall,precision,f1'
    assert len(rows) == 1 + 4
    assert rows[3].startswith('3,img3.png,cell,0,0,0,,,')


def test_dump_off_and_build_from_registry(tmp_path):
    metric = METRICS.build(dict(type='CellDetMetric', iou_thr=0.3, out_dir=str(tmp_path),
                                dump_per_image=False))
    assert isinstance(metric, CellDetMetric) and metric.iou_thr == 0.3
    evaluator = Evaluator(metric)
    evaluator.dataset_meta = dict(classes=('cell',))
    evaluator.process(binary_images()[:1])
    evaluator.evaluate(1)
    assert not list(tmp_path.iterdir())


def test_a_label_out_of_range_names_the_image():
    images = [sample([box(0, 0)], [0.9], [0], [box(0, 0)], [0], img_id=1),
              sample([box(0, 0)], [0.9], [0], [box(0, 0)], [3], img_id=2)]
    with pytest.raises(ValueError, match=r'^img2\.png: ground-truth label 3 out of range: '
                                         r'expected 0\.\.1 for 2 classes$'):
        evaluate(images, classes=('a', 'b'))


def test_to_numpy_takes_tensors_boxes_and_arrays():
    """The one conversion of the metric and the overlays: a tensor that requires grad
    (detached), mmdet boxes (their tensor) and array-likes."""
    weights = torch.tensor([[0., 1, 2, 3]], requires_grad=True)
    np.testing.assert_array_equal(to_numpy(weights * 2), [[0, 2, 4, 6]])
    np.testing.assert_array_equal(to_numpy(HorizontalBoxes(torch.ones(2, 4))),
                                  np.ones((2, 4)))
    assert to_numpy([1, 2]).tolist() == [1, 2]


def test_dump_metric_reads_the_prefixed_summary_value():
    report = dict(prefix='cell', metrics={'cell/a/avg_f1': 0.5, 'cell/ap': None})
    assert dump_metric(report, 'a/avg_f1') == 0.5
    assert dump_metric(report, 'ap') is None  # NaN, written as null
    assert dump_metric(dict(prefix=None, metrics={'ap': 0.25}), 'ap') == 0.25
    assert dump_metric(report, 'pu_score_thr', optional=True) is None
    with pytest.raises(KeyError, match='cell/pu_score_thr'):
        dump_metric(report, 'pu_score_thr')


def test_bad_arguments_fail_clearly():
    with pytest.raises(ValueError, match='iou_thr'):
        CellDetMetric(iou_thr=0)
    with pytest.raises(ValueError, match='radius'):
        CellDetMetric(radius=-1)
    with pytest.raises(ValueError, match='score in \\[0, 1\\], got 1.5'):
        CellDetMetric(score_thr=1.5)
    # 'val' is for tools/test.py to resolve, never a metric's value
    with pytest.raises(ValueError, match="score_thr='val' is resolved by tools/test.py"):
        CellDetMetric(score_thr='val')
    evaluator = Evaluator(CellDetMetric())
    with pytest.raises(RuntimeError, match='dataset_meta'):
        evaluator.process(binary_images()[:1])


def test_ap_and_ranked_detections_in_the_log_and_the_dump(tmp_path):
    # image 1: cells A, B; detections TP on A (0.9), FP (0.8), TP on B (0.3 < score_thr)
    # image 2: cell C; an FP (0.6), none on C
    images = [sample([box(0, 0), box(100, 100), box(50, 0)], [0.9, 0.8, 0.3], [0, 0, 0],
                     [box(0, 0), box(50, 0)], [0, 0], img_id=1),
              sample([box(200, 200)], [0.6], [0], [box(0, 0)], [0], img_id=2)]
    metrics = evaluate(images, out_dir=str(tmp_path))
    # ranked over the set: 0.9 TP, 0.8 FP, 0.6 FP, 0.3 TP with 3 cells
    assert metrics['cell/cell/ap'] == pytest.approx(1 / 3 + 1 / 3 * 2 / 4)
    assert metrics['cell/ap'] == metrics['cell/cell/ap']
    # where the ranking stops: A and B are found at some score, C by none
    assert metrics['cell/cell/max_recall'] == pytest.approx(2 / 3)
    assert metrics['cell/max_recall'] == metrics['cell/cell/max_recall']
    assert (metrics['cell/cell/tp'], metrics['cell/cell/fp']) == (1, 2)  # at 0.5
    report = json.loads((tmp_path / 'test_per_image.json').read_text())
    first, second = report['images']
    assert first['detections'] == dict(scores=pytest.approx([0.9, 0.8, 0.3]),
                                       labels=[0, 0, 0], matched=[True, False, True],
                                       kinds=[0, 4, 0])
    assert report['kinds'] == ['tp', 'duplicate', 'class', 'box', 'background']
    assert first['ap'] == [pytest.approx(1 / 2 + 1 / 2 * 2 / 3)] and second['ap'] == [0.0]


def test_multi_class_ap_leaves_out_classes_without_cells():
    images = [sample([box(0, 0), box(50, 0)], [0.9, 0.7], [0, 1], [box(0, 0)], [0])]
    metrics = evaluate(images, classes=('a', 'b'))
    assert metrics['cell/a/ap'] == 1.0 and math.isnan(metrics['cell/b/ap'])
    assert metrics['cell/ap'] == 1.0
    assert metrics['cell/a/max_recall'] == 1.0 and math.isnan(metrics['cell/b/max_recall'])
    assert metrics['cell/max_recall'] == 1.0


def test_false_positives_by_kind():
    # cells: A (class 0) at (0, 0), B (class 1) at (50, 0)
    gt, gt_labels = [box(0, 0), box(50, 0)], [0, 1]
    preds = [box(0, 0),             # TP on A
             box(1, 0),             # duplicate of A (IoU 90/110)
             box(50, 0),            # class error: on B, predicted class 0
             box(-5, -5, 20, 20),   # box error: 4x too large around A (IoU 100/400)
             box(200, 200)]         # background
    labels = [0, 0, 0, 0, 0]
    scores = [0.9, 0.8, 0.7, 0.6, 0.55]
    match = match_image(preds, scores, labels, gt, gt_labels)
    kinds = error_kinds(match, preds, labels, gt, gt_labels)
    assert [ERROR_KINDS[k] for k in kinds] == ['tp', 'duplicate', 'class', 'box',
                                               'background']
    # with the centre-distance criterion there is no box error: the large box,
    # centred on A, is a duplicate
    match = match_image(preds, scores, labels, gt, gt_labels, radius=3)
    kinds = error_kinds(match, preds, labels, gt, gt_labels, radius=3)
    assert [ERROR_KINDS[k] for k in kinds] == ['tp', 'duplicate', 'class', 'duplicate',
                                               'background']
    metrics = evaluate([sample(preds + [box(0, 0, 40, 40)], scores + [0.4], labels + [0],
                               gt, gt_labels)], classes=('a', 'b'))
    # at score >= 0.5; the large box below it is not counted
    assert [metrics[f'cell/a/fp_{kind}'] for kind in ERROR_KINDS[1:]] == [1, 1, 1, 1]
    assert metrics['cell/a/fp'] == 4 and metrics['cell/b/fp_box'] == 0


# ---------------------------------------------------------------- ignored regions

def test_dont_care_is_a_non_tp_detection_of_an_ignored_region():
    match = match_image([box(0, 0), box(1, 0), box(50, 50), box(100, 100)],
                        [0.9, 0.8, 0.7, 0.6], [0, 0, 0, 0], [box(0, 0)], [0])
    ignored = [box(0, 0), box(51, 50), box(100, 104)]  # IoU 1, 0.82, 0.43
    assert dont_care(match, [box(0, 0), box(1, 0), box(50, 50), box(100, 100)],
                     ignored).tolist() == [False, True, True, False]
    assert dont_care(match, [box(0, 0), box(1, 0), box(50, 50), box(100, 100)],
                     np.zeros((0, 4))).tolist() == [False] * 4
    # with the radius criterion, centre distances decide
    assert dont_care(match, [box(0, 0), box(1, 0), box(50, 50), box(100, 100)], ignored,
                     radius=3.5).tolist() == [False, True, True, False]


def test_ignored_regions_are_neither_tp_fp_nor_fn():
    # a cell found (TP), a detection of an unclassified nucleus (don't care, any class),
    # a background FP, and an ignored region nobody detected (not a miss)
    with_ignored = sample([box(0, 0), box(50, 50), box(200, 200)], [0.9, 0.8, 0.7],
                          [0, 1, 0], [box(0, 0)], [0],
                          ignored_boxes=[box(50, 50), box(120, 120)])
    metrics = evaluate([with_ignored], classes=('a', 'b'))
    assert (metrics['cell/a/tp'], metrics['cell/a/fp'], metrics['cell/a/fn']) == (1, 1, 0)
    assert (metrics['cell/b/tp'], metrics['cell/b/fp'], metrics['cell/b/fn']) == (0, 0, 0)
    # ranked over the set: 0.9 TP, 0.7 FP for class a; the don't-care detection left out
    assert metrics['cell/a/ap'] == 1.0
    without = sample([box(0, 0), box(50, 50), box(200, 200)], [0.9, 0.8, 0.7], [0, 1, 0],
                     [box(0, 0)], [0])
    assert evaluate([without], classes=('a', 'b'))['cell/b/fp'] == 1
