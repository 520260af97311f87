"""Choosing the class prior from validation runs (docs/method.md#prior-selection).

Each candidate prior is one training whose last validation wrote
``<run dir>/cell_metrics/val_per_image.json`` (``CellDetMetric``). The paper chooses the
value with the best validation **average recall** (Section 2.3; precision is
meaningless when validation labels are incomplete); Lee & Liu's criterion
r^2 / Pr[f(x) = 1] (ICML 2003) also sees the false positives of a bolder detector. The
recall band is the set of values validation cannot tell apart from the best.
"""
import argparse
import math
import os.path as osp

import numpy as np

from mmdet_pu.evaluation.cell_metric import dump_metric, report_path
from mmdet_pu.evaluation.metric_dump import read_metric_dump
from mmdet_pu.evaluation.score_threshold import (normalised_criterion, point_estimate_thr,
                                                 pu_threshold_criterion)
from .keys import get_key, type_name

SELECTION_METRIC = 'avg_recall'
COLUMNS = ('avg_recall', 'avg_precision', 'avg_f1', 'pooled_recall', 'pooled_precision',
           'pooled_f1')


def check_sweep_config(cfg, config_file, keys):
    """Fail early, before any training, on a config a sweep over ``keys`` cannot use:
    no prior key, a key not holding a number, no validation with ``CellDetMetric``
    (whose per-image dump the selection reads)."""
    if not keys:
        raise ValueError(f'{config_file}: no PULoss prior and no PriorUpdateHook found; '
                         'give the key(s) holding the prior with --key')
    for key in keys:
        value = get_key(cfg, key)
        if not isinstance(value, (int, float)):
            raise ValueError(f'{config_file}: {key} = {value!r}, expected a number')
    for name in ('val_dataloader', 'val_cfg', 'val_evaluator'):
        if not cfg.get(name, None):
            raise ValueError(f'{config_file}: `{name}` is not set; the sweep selects on '
                             'the validation set')
    evaluators = cfg.val_evaluator
    evaluators = evaluators if isinstance(evaluators, (list, tuple)) else [evaluators]
    if not any(type_name(e) == 'CellDetMetric' for e in evaluators):
        raise ValueError(f'{config_file}: val_evaluator must include CellDetMetric (it '
                         'writes the validation recall the sweep selects on), got '
                         f'{[type_name(e) for e in evaluators]}')


def read_val_metrics(run_dir):
    """Summary metrics of the run's last validation, or None if it has none yet.

    Also ``pu_score_thr``, the score threshold the validation selected with its PU
    criterion (None when it has none), ``pu_score_thr_point``, the one the criterion's
    point estimate selected (:func:`~mmdet_pu.evaluation.score_threshold.
    point_estimate_thr`), and ``counts``: per class the labeled cells
    matched (``tp``), the detections
    (``detections``) and the labeled cells (``num_gt``) over the validation images (the
    metric's pooled ``tp``/``fp``/``fn``), and ``num_images``: what Lee & Liu's
    criterion needs.
    """
    path = report_path(run_dir, 'val')
    if not osp.exists(path):
        return None
    report = read_metric_dump(path, ('classes', 'metrics'))
    values = {k: dump_metric(report, k) for k in COLUMNS}
    metrics = {k: float('nan') if v is None else float(v) for k, v in values.items()}
    tp, fp, fn = (np.array([dump_metric(report, f'{name}/{k}')
                            for name in report['classes']], dtype=np.int64)
                  for k in ('tp', 'fp', 'fn'))
    metrics['counts'] = dict(tp=tp, detections=tp + fp, num_gt=tp + fn,
                             num_images=len(report['images']))
    score_thr = dump_metric(report, 'pu_score_thr', optional=True)
    metrics['pu_score_thr'] = None if score_thr is None or math.isnan(score_thr) \
        else float(score_thr)
    metrics['pu_score_thr_point'] = point_estimate_thr(report)
    return metrics


def choose(rows):
    """Best validation average recall; NaN never wins; ties go to the smaller prior."""
    def rank(row):
        recall = row[SELECTION_METRIC]
        return (-(recall if not math.isnan(recall) else -math.inf), row['prior'])
    return min(rows, key=rank)


def choose_by_pu_criterion(rows):
    """The row with the best Lee & Liu criterion; sets every row's ``pu_criterion``.

    ``pu_criterion`` is the mean over the classes with labeled cells of r^2 / Pr[f(x)=1]
    divided by the class's maximum over the rows (1 for the best value of a class).
    Ties go to the smaller prior.
    """
    rows = sorted(rows, key=lambda row: row['prior'])
    counts = [row['counts'] for row in rows]
    num_gt, num_images = counts[0]['num_gt'], counts[0]['num_images']
    for row, count in zip(rows, counts):
        if not np.array_equal(count['num_gt'], num_gt) or \
                count['num_images'] != num_images:
            raise ValueError(
                f'{row["run_dir"]}: validated on {count["num_images"]} images with '
                f'{count["num_gt"].tolist()} labeled cells per class, '
                f'{rows[0]["run_dir"]} on {num_images} with {num_gt.tolist()}; the PU '
                'criterion compares runs on the same validation labels only')
    scores = normalised_criterion(pu_threshold_criterion(
        np.stack([c['tp'] for c in counts], axis=1),
        np.stack([c['detections'] for c in counts], axis=1), num_gt, num_images))
    if scores is None:
        raise RuntimeError('no run detects a labeled validation cell: the PU criterion '
                           'cannot choose (see the runs\' validation results)')
    for row, value in zip(rows, scores):
        row['pu_criterion'] = float(value)
    return rows[int(np.argmax(scores))]


def recall_band(rows, band):
    """The values whose validation average recall is within ``band`` of the best.

    Returns a dict with the ``tolerance``, the best ``recall``, the ``values`` in the
    band (sorted) and its ``low`` and ``high`` ends. A value without a recall (NaN) is
    never in it.
    """
    recalls = [row[SELECTION_METRIC] for row in rows]
    best = max((r for r in recalls if not math.isnan(r)), default=math.nan)
    values = sorted(row['prior'] for row in rows
                    if not math.isnan(row[SELECTION_METRIC])
                    and row[SELECTION_METRIC] >= best - band - 1e-12)
    return dict(tolerance=band, recall=None if math.isnan(best) else best, values=values,
                low=values[0] if values else None, high=values[-1] if values else None)


def _band(text):
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f'expected 0 <= BAND < 1, got {text}')
    return value


def add_selection_arguments(parser) -> None:
    """``--band`` (:func:`recall_band`'s tolerance) and ``--key`` (the config keys that
    hold the prior; default :func:`.keys.find_prior_keys`), as the
    prior tools take them."""
    parser.add_argument('--band', type=_band, default=0.02,
                        help='recall band: values whose validation average recall is '
                        'within BAND of the best (default 0.02)')
    parser.add_argument('--key', action='append', dest='keys', metavar='KEY',
                        help='config key holding the prior (repeatable); default: '
                        'found in the config (tools/sweep_prior.py explains how)')
