"""Which of two detectors ranks a class's labeled validation cells better, and how sure
that is: a paired bootstrap over the images of their validation dumps
(docs/method.md#class-guard).

With incomplete labels a detection that matches no labeled cell may be an unlabeled
one, so precision and AP on the labeled cells are not the true ones. Where the labeled
cells are a random sample of the cells (each kept with the same probability c), a
detection matches a labeled cell with c times the probability that it matches a cell,
so the labeled cells' precision at every recall is c times the true one and AP on them
is about c times the true AP: two detectors of one validation split rank in the order
of their true AP (Elkan & Noto 2008 for the scaled posterior). The images are the units
of the resample: each resample draws the n validation images with replacement, both
detectors see the same draw, and a detection counts as often as its image was drawn
(:func:`~.rates.average_precision` with weights).
"""
from typing import List, NamedTuple

import numpy as np

from .metric_dump import read_metric_dump
from .rates import average_precision


class ClassComparison(NamedTuple):
    """One class of :func:`compare_ap`: the two detectors' AP on the labeled cells of
    the whole validation split, and the share of resamples in which ``b`` ranks them
    better than ``a`` (strictly)."""
    ap_a: float
    ap_b: float
    b_better: float


def _class_rankings(report: dict, label: int):
    """``(scores, matched, image index, cells per image)`` of one class in a dump."""
    scores, matched, image, cells = [], [], [], []
    for index, entry in enumerate(report['images']):
        found = entry['detections']
        of_class = np.asarray(found['labels'], dtype=np.int64) == label
        scores.append(np.asarray(found['scores'], dtype=np.float64)[of_class])
        matched.append(np.asarray(found['matched'], dtype=bool)[of_class])
        image.append(np.full(int(of_class.sum()), index))
        cells.append(entry['tp'][label] + entry['fn'][label])
    scores, matched, image = (np.concatenate(v) for v in (scores, matched, image))
    # ranked once: each resample's AP then sorts an already ordered array
    order = np.argsort(-scores, kind='stable')
    return scores[order], matched[order], image[order], np.asarray(cells, dtype=np.float64)


def _image_keys(report: dict, path: str) -> List[tuple]:
    keys = [(entry['img_id'], entry['img_path']) for entry in report['images']]
    if len(set(keys)) != len(keys):
        raise ValueError(f'{path}: an image is listed twice; expected a per-image dump '
                         'of CellDetMetric')
    return keys


def compare_ap(dump_a: str, dump_b: str, resamples: int = 1000,
               seed: int = 0) -> List[ClassComparison]:
    """Per class of the two validation dumps (``CellDetMetric``'s
    ``val_per_image.json`` of two detectors on one split), :class:`ClassComparison`.

    Raises:
        ValueError: the dumps hold other classes or other images, or ``resamples`` < 1.
    """
    if resamples < 1:
        raise ValueError(f'compare_ap: resamples must be >= 1, got {resamples!r}')
    fields = ('classes', 'images')
    report_a, report_b = (read_metric_dump(path, fields) for path in (dump_a, dump_b))
    if report_a['classes'] != report_b['classes']:
        raise ValueError(f'{dump_b}: classes {report_b["classes"]}, expected those of '
                         f'{dump_a}: {report_a["classes"]}')
    keys = _image_keys(report_a, dump_a)
    if sorted(keys) != sorted(_image_keys(report_b, dump_b)):
        raise ValueError(f'{dump_a} and {dump_b} hold other images: the detectors must '
                         'be validated on one split')
    position = {key: i for i, key in enumerate(keys)}
    report_b = dict(report_b, images=sorted(
        report_b['images'], key=lambda e: position[(e['img_id'], e['img_path'])]))
    rng = np.random.default_rng(seed)
    draws = [np.bincount(rng.integers(0, len(keys), len(keys)), minlength=len(keys))
             for _ in range(resamples)]
    comparisons = []
    for label in range(len(report_a['classes'])):
        a, b = _class_rankings(report_a, label), _class_rankings(report_b, label)
        wins = 0
        for times in draws:
            ap_a, ap_b = (average_precision(scores, matched, float(times @ cells),
                                            times[image])
                          for scores, matched, image, cells in (a, b))
            wins += bool(ap_b > ap_a)  # NaN (no cell drawn) is no win
        comparisons.append(ClassComparison(
            average_precision(a[0], a[1], float(a[3].sum())),
            average_precision(b[0], b[1], float(b[3].sum())), wins / resamples))
    return comparisons
