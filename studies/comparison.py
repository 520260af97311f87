"""Comparing methods: mean ± std per class, paired t-tests, BH correction.

The library side of ``tools/compare.py`` (the paper's tables), ``tools/repeat.py``
(repeated runs over seeds and folds) and ``tools/demo.py``. It reads the per-image dumps
``cell_metrics/<split>_per_image.json`` that ``CellDetMetric`` writes when
``tools/test.py`` evaluates a run.

Two tables, each its own family of tests: the paper's, recall, precision and F1 at the
metric's score threshold (:data:`RATES`), and the one that separates the detector's
ranking from the calibration of its threshold (:data:`RANKING`): F1 at the metric's
threshold, F1 at the threshold the run's validation selected and AP. The F1 at the
validation threshold comes from the same test pass: the dump's ranked detections give
the counts at any threshold (:func:`~.rates.counts_at`), here at ``pu_score_thr`` of the
validation dump beside the test dump (``val_per_image.json``, written at the end of
training); a run without one (or whose validation selected none) has no such value
(NaN, shown ``-``, left out of the statistics), and the table's note counts them.

A :class:`Method` holds one value per *unit* for each ``(class, rate)``:

* runs (folds, seeds, seeds x folds; :func:`load_runs`, :func:`load_folds`): a unit is
  one run and its value the run's average (``stat='avg'``, mean over test images) or
  pooled recall / precision / F1. The runs of two methods are paired by position, so
  both lists must be in the same order and each pair must evaluate the same test images
  (checked).
* test images (:func:`load_images`, one run per method): a unit is one test image,
  paired across methods by image id and file name; images where a value is undefined
  for either method are left out.

:func:`build_table` tests every method except the reference and the untested ones
against the reference with a two-sided paired Student's t-test
(:func:`~mmdet_pu.evaluation.statistics.paired_ttest`) for each class and rate; all
p-values of the table form one family for the Benjamini-Hochberg correction. The tables
are written as Markdown, LaTeX, JSON and a figure by :mod:`.comparison_format`.
"""
import glob
import os.path as osp
import re
from typing import Dict, List, NamedTuple, Optional, Sequence

import numpy as np

from mmdet_pu.evaluation.cell_metric import dump_metric, report_path
from mmdet_pu.evaluation.metric_dump import (PER_IMAGE_FIELDS, read_metric_dump,
                                             read_validation_thr)
from mmdet_pu.evaluation.rates import RATES, counts_at, detection_rates, nanmean
from mmdet_pu.evaluation.statistics import benjamini_hochberg, mean_std, paired_ttest

#: F1 at the metric's threshold, F1 at the validation threshold, AP.
RANKING = ('f1', 'f1_val', 'ap')
#: Pseudo-class of the means over classes (``cell/avg_f1``, ...) of a multi-class dump.
OVERALL = 'mean of classes'


class Method(NamedTuple):
    """Per-unit values of one method.

    ``values[(class, measure)]`` is an array over ``units`` (runs or test images) for
    each measure of :data:`RATES` and :data:`RANKING`; ``sources`` are the dumps the
    values come from, ``score_thrs`` their metric's score thresholds and
    ``val_score_thrs`` the validation thresholds of their runs (None: none).
    """
    name: str
    sources: List[str]
    classes: List[str]
    units: List[object]
    values: Dict[tuple, np.ndarray]
    score_thrs: Sequence[float] = ()
    val_score_thrs: Sequence[Optional[float]] = ()


def natural_key(text: str):
    """Sort key that orders ``fold2`` before ``fold10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r'(\d+)', text)]


def resolve_reports(pattern: str, split: str) -> List[str]:
    """The per-image JSON files a path or glob of work dirs points to, in natural order."""
    matches = sorted(glob.glob(pattern), key=natural_key) or (
        [pattern] if osp.exists(pattern) else [])
    if not matches:
        raise FileNotFoundError(f'{pattern!r} matches no work dir or file')
    reports = []
    for path in matches:
        report = path if path.endswith('.json') else report_path(path, split)
        if not osp.isfile(report):
            raise FileNotFoundError(
                f'{report} not found; run tools/test.py on {path} with CellDetMetric as '
                'the test evaluator first')
        reports.append(report)
    return reports


def validation_thr(path: str) -> Optional[float]:
    """The threshold the validation of the run of test dump ``path`` selected: the
    ``pu_score_thr`` of ``val_per_image.json`` beside it; None without that dump or a
    selected threshold."""
    dump = osp.join(osp.dirname(path), 'val_per_image.json')
    return read_validation_thr(dump) if osp.isfile(dump) else None


def image_counts_at(report: dict, score_thr: Optional[float]):
    """TP, FP and FN of each image and class at ``score_thr``, three ``(images, C)``
    arrays from the dump's ranked detections; None when ``score_thr`` is None or the
    dump has no ranked detections (written before the metric kept them)."""
    images = report['images']
    if score_thr is None or any('detections' not in image for image in images):
        return None
    num_classes = len(report['classes'])
    counts = np.array([counts_at(*(image['detections'][k]
                                   for k in ('scores', 'labels', 'matched')),
                                 np.add(image['tp'], image['fn']), score_thr, num_classes)
                       for image in images], dtype=np.int64)
    counts = counts.reshape(len(images), 3, num_classes)
    return counts[:, 0], counts[:, 1], counts[:, 2]


def f1_of_run_at(report: dict, score_thr: Optional[float], stat: str = 'avg'):
    """F1 of a run at ``score_thr``: per class (``stat``: mean over images or pooled)
    and their mean over classes; NaN where :func:`image_counts_at` gives nothing."""
    counts = image_counts_at(report, score_thr)
    if counts is None:
        return np.full(len(report['classes']), np.nan), float('nan')
    if stat == 'avg':
        per_class = nanmean(detection_rates(*counts)['f1'], axis=0)
    else:
        per_class = detection_rates(*(c.sum(0) for c in counts))['f1']
    return per_class, float(nanmean(per_class))


def image_key(image: dict) -> tuple:
    """Identity of a test image across methods: COCO id and file name."""
    return image['img_id'], osp.basename(image['img_path'] or '')


def _as_float(values):
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def load_runs(name: str, reports: List[str], stat: str = 'avg',
              overall: bool = False) -> Method:
    """One value per run: the average (or pooled) rates of each dump in ``reports``.

    Args:
        name: the method's name.
        reports: per-image dumps, one per run, in the order in which they pair with the
            runs of the other methods.
        stat: ``'avg'`` (mean over test images, the paper's) or ``'pooled'``.
        overall: with several classes, add the pseudo-class :data:`OVERALL` holding the
            means over classes (``cell/avg_f1``, ...).
    """
    if not reports:
        raise ValueError(f'{name}: no runs to load')
    loaded = [read_metric_dump(path, PER_IMAGE_FIELDS) for path in reports]
    classes = loaded[0]['classes']
    for path, report in zip(reports, loaded):
        if report['classes'] != classes:
            raise ValueError(f'{path}: classes {report["classes"]} differ from '
                             f'{classes} of {reports[0]}')
    values = {(cls, rate): _as_float([dump_metric(r, f'{cls}/{stat}_{rate}')
                                      for r in loaded])
              for cls in classes for rate in RATES}
    val_thrs = [validation_thr(path) for path in reports]
    f1_val = [f1_of_run_at(r, thr, stat) for r, thr in zip(loaded, val_thrs)]
    for c, cls in enumerate(classes):
        values[(cls, 'f1_val')] = _as_float([per_class[c] for per_class, _ in f1_val])
        values[(cls, 'ap')] = _as_float([dump_metric(r, f'{cls}/ap', optional=True)
                                         for r in loaded])
    if overall and len(classes) > 1:
        values.update({(OVERALL, rate): _as_float([dump_metric(r, f'{stat}_{rate}')
                                                   for r in loaded]) for rate in RATES})
        values[(OVERALL, 'f1_val')] = _as_float([mean for _, mean in f1_val])
        values[(OVERALL, 'ap')] = _as_float([dump_metric(r, 'ap', optional=True)
                                             for r in loaded])
        classes = [*classes, OVERALL]
    units = [frozenset(image_key(image) for image in r['images']) for r in loaded]
    return Method(name, list(reports), list(classes), units, values,
                  [r.get('score_thr') for r in loaded], val_thrs)


def load_folds(name: str, pattern: str, split: str, stat: str = 'avg') -> Method:
    """One value per fold (work dir) matched by ``pattern``, in natural order."""
    return load_runs(name, resolve_reports(pattern, split), stat)


def load_images(name: str, pattern: str, split: str) -> Method:
    """One value per test image, from a single work dir."""
    sources = resolve_reports(pattern, split)
    if len(sources) != 1:
        raise ValueError(f'--per-image takes one work dir per method; {pattern!r} '
                         f'matches {len(sources)}')
    report = read_metric_dump(sources[0], PER_IMAGE_FIELDS)
    classes = report['classes']
    units = [image_key(image) for image in report['images']]
    if len(set(units)) != len(units):
        raise ValueError(f'{sources[0]}: an image (id, file name) appears twice')
    values = {(cls, rate): _as_float([image[rate][c] for image in report['images']])
              for c, cls in enumerate(classes) for rate in RATES}
    val_thr = validation_thr(sources[0])
    counts = image_counts_at(report, val_thr)
    f1_val = (np.full((len(units), len(classes)), np.nan) if counts is None
              else detection_rates(*counts)['f1'])
    for c, cls in enumerate(classes):
        values[(cls, 'f1_val')] = f1_val[:, c]
        values[(cls, 'ap')] = _as_float([image['ap'][c] if 'ap' in image else None
                                         for image in report['images']])
    return Method(name, sources, classes, units, values, [report.get('score_thr')],
                  [val_thr])


def pair_values(method: Method, ref: Method, cls: str, rate: str, per_image: bool):
    """The two value arrays of a paired test, unit by unit."""
    a, b = method.values[(cls, rate)], ref.values[(cls, rate)]
    if per_image:
        index = {unit: i for i, unit in enumerate(method.units)}
        missing = [unit for unit in ref.units if unit not in index]
        if missing:
            raise ValueError(f'{method.name} has no result for image {missing[0]} of '
                             f'{ref.name} ({method.sources[0]})')
        return a[[index[unit] for unit in ref.units]], b
    if len(method.units) != len(ref.units):
        raise ValueError(f'{method.name} has {len(method.units)} folds/runs, {ref.name} '
                         f'{len(ref.units)}; the paired t-test needs the same folds/runs')
    for i, (mine, theirs) in enumerate(zip(method.units, ref.units)):
        if mine != theirs:
            raise ValueError(f'fold {i}: {method.sources[i]} and {ref.sources[i]} '
                             'evaluate different test images; pair the folds in the '
                             'same order')
    return a, b


class Cell(NamedTuple):
    mean: float
    std: float
    p: Optional[float]  # BH-adjusted; None: not tested


def build_table(methods: List[Method], ref: str, untested=(), per_image=False,
                measures: Sequence[str] = RATES):
    """``{(method, class, measure): Cell}`` over ``measures`` and the number of tests in
    the table's BH family."""
    by_name = {m.name: m for m in methods}
    if ref not in by_name:
        raise ValueError(f'--ref {ref!r} is not one of --names {list(by_name)}')
    reference = by_name[ref]
    for m in methods:
        if m.classes != reference.classes:
            raise ValueError(f'{m.name} has classes {m.classes}, {ref} has '
                             f'{reference.classes}')
    tests, raw_p = [], []
    for m in methods:
        if m.name == ref or m.name in untested:
            continue
        for cls in reference.classes:
            for rate in measures:
                tests.append((m.name, cls, rate))
                raw_p.append(paired_ttest(*pair_values(m, reference, cls, rate,
                                                       per_image))[1])
    adjusted = dict(zip(tests, benjamini_hochberg(raw_p)))
    table = {}
    for m in methods:
        for cls in reference.classes:
            for rate in measures:
                mean, std = mean_std(m.values[(cls, rate)])
                table[(m.name, cls, rate)] = Cell(
                    mean, std, adjusted.get((m.name, cls, rate)))
    return table, len(tests)


class Comparison(NamedTuple):
    """Both tables of a comparison (:func:`compare`).

    ``rates``: the :data:`RATES` table and its number of tests; ``ranking``: the
    :data:`RANKING` table and its number of tests (each table its own BH family).
    """
    methods: List[Method]
    ref: str
    untested: Sequence[str]
    per_image: bool
    rates: dict
    rate_tests: int
    ranking: dict
    ranking_tests: int


def compare(methods: List[Method], ref: str, untested=(), per_image=False) -> Comparison:
    """The :data:`RATES` and :data:`RANKING` tables of ``methods`` against ``ref``."""
    rates, rate_tests = build_table(methods, ref, untested, per_image)
    ranking, ranking_tests = build_table(methods, ref, untested, per_image, RANKING)
    return Comparison(methods, ref, list(untested), per_image, rates, rate_tests, ranking,
                      ranking_tests)
