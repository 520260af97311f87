"""Finding cells and classifying them apart: detections merged across classes, their
match to every cell, the confusion matrix, and CellDetMetric's multi-class metrics."""
import json
import math

import numpy as np
import pytest

from mmdet_pu.evaluation import match_image
from mmdet_pu.evaluation.classes_merged import (confusion_matrix, match_classes_merged,
                                                merge_classes)
from .test_cell_metric import box, evaluate, sample


def test_match_image_names_the_cell_each_true_positive_found():
    m = match_image([box(40, 40), box(0, 0), box(90, 90)], [0.9, 0.8, 0.7], [0, 0, 0],
                    [box(0, 0), box(40, 40)], [0, 0])
    assert m.pred_gt.tolist() == [1, 0, -1]


def test_merge_classes_keeps_the_top_detection_of_each_location():
    # one nucleus scored twice (class 1 at 0.4, class 0 at 0.3), another once
    bboxes = [box(0, 0), box(1, 0), box(50, 50)]
    assert merge_classes(bboxes, [0.3, 0.4, 0.2]).tolist() == [1, 2]
    # IoU of box(0, 0) and box(5, 0) is 1/3: both stand at IoU 0.5, one at IoU 0.3
    assert merge_classes([box(0, 0), box(5, 0)], [0.9, 0.8]).tolist() == [0, 1]
    assert merge_classes([box(0, 0), box(5, 0)], [0.9, 0.8], iou_thr=0.3).tolist() == [0]
    # the radius criterion merges by centre distance
    assert merge_classes([box(0, 0), box(5, 0)], [0.9, 0.8], radius=5).tolist() == [0]
    assert merge_classes([box(0, 0), box(5, 0)], [0.9, 0.8], radius=4.9).tolist() == [0, 1]
    assert merge_classes(np.zeros((0, 4)), []).tolist() == []


def test_match_classes_merged_finds_cells_whatever_their_class():
    # cell of class 1 at (0, 0) scored as class 0 (0.6) and as class 1 (0.5); a
    # background detection; a detection of an ignored region
    merged = match_classes_merged(
        [box(0, 0), box(0, 1), box(100, 100), box(50, 50)], [0.6, 0.5, 0.4, 0.7],
        [0, 1, 0, 1], [box(0, 0), box(200, 200)], [1, 0], ignored_bboxes=[box(50, 50)])
    assert merged['scores'].tolist() == pytest.approx([0.6, 0.4])
    assert merged['labels'].tolist() == [0, 0]
    assert merged['true_labels'].tolist() == [1, -1]


def test_match_classes_merged_on_an_image_without_cells_or_detections():
    # a tile holding no classified cell: every detection is a false positive
    merged = match_classes_merged([box(0, 0), box(50, 50)], [0.6, 0.5], [0, 1],
                                  np.zeros((0, 4)), [])
    assert merged['true_labels'].tolist() == [-1, -1]
    assert merged['labels'].tolist() == [0, 1]
    empty = match_classes_merged(np.zeros((0, 4)), [], [], [box(0, 0)], [1])
    assert [len(v) for v in empty.values()] == [0, 0, 0]


def test_confusion_matrix_counts_the_cells_found_at_the_threshold():
    images = [dict(scores=np.array([0.9, 0.8, 0.6, 0.3]), labels=np.array([0, 1, 1, 0]),
                   true_labels=np.array([0, 0, -1, 1])),
              dict(scores=np.array([0.7]), labels=np.array([1]), true_labels=np.array([1]))]
    assert confusion_matrix(images, 0.5, 2).tolist() == [[1, 1], [0, 1]]
    assert confusion_matrix(images, 0.2, 2).tolist() == [[1, 1], [1, 1]]


def multi_class_image():
    """Cells: class a at (0, 0), class b at (40, 40) and (80, 80). Detections: (0, 0) as
    a (0.9) and as b (0.6); (40, 40) as a (0.8, the wrong class); (80, 80) missed; a
    background detection as b (0.7)."""
    return sample([box(0, 0), box(0, 0), box(40, 40), box(150, 150)],
                  [0.9, 0.6, 0.8, 0.7], [0, 1, 0, 1],
                  [box(0, 0), box(40, 40), box(80, 80)], [0, 1, 1])


def test_metric_measures_finding_and_classifying_apart(tmp_path):
    m = evaluate([multi_class_image()], classes=('a', 'b'), out_dir=str(tmp_path))
    # per class: a 1 TP (0.9) + 1 FP (0.8); b 0 TP, 2 FP (0.6 duplicate location, 0.7)
    assert m['cell/a/avg_f1'] == pytest.approx(2 / 3)
    assert m['cell/b/avg_f1'] == 0
    # classes merged: 0.9 and 0.8 find two of three cells, 0.7 is a false positive
    assert m['cell/classes_merged/avg_recall'] == pytest.approx(2 / 3)
    assert m['cell/classes_merged/avg_precision'] == pytest.approx(2 / 3)
    assert m['cell/classes_merged/ap'] == pytest.approx(2 / 3)  # precision 1 up to 2/3
    # of the two cells found, one was given its class
    assert m['cell/class_accuracy'] == 0.5
    report = json.loads((tmp_path / 'test_per_image.json').read_text())
    assert report['confusion'] == [[1, 0], [1, 0]]


def test_metric_merged_rates_follow_the_score_threshold():
    m = evaluate([multi_class_image()], classes=('a', 'b'), score_thr=0.85)
    assert m['cell/classes_merged/avg_recall'] == pytest.approx(1 / 3)
    assert m['cell/class_accuracy'] == 1
    m = evaluate([multi_class_image()], classes=('a', 'b'), score_thr=0.95)
    assert math.isnan(m['cell/class_accuracy'])  # no cell found


def test_one_class_has_nothing_to_merge(tmp_path):
    m = evaluate([sample([box(0, 0)], [0.9], [0], [box(0, 0)], [0])],
                 out_dir=str(tmp_path))
    assert not any('classes_merged' in k or 'class_accuracy' in k for k in m)
    assert json.loads((tmp_path / 'test_per_image.json').read_text())['confusion'] is None
