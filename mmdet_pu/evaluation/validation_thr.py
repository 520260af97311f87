"""The score threshold a test takes from the validation of its training.

A test evaluator's ``score_thr`` may be ``'val'`` (in the config, or ``--score-thr val``
of the test command line): the threshold Lee & Liu's criterion selected on the
validation set at the end of training (:mod:`.score_threshold`), read from the
validation dump beside the checkpoint (``<checkpoint dir>/cell_metrics/
val_per_image.json``, :func:`.metric_dump.read_validation_thr`).
"""
import logging
import os.path as osp

from mmengine.logging import print_log

from .cell_metric import report_path
from .metric_dump import read_validation_thr


def validation_score_thr(checkpoint: str) -> float:
    """``pu_score_thr`` of the validation dump beside ``checkpoint``
    (``<checkpoint dir>/cell_metrics/val_per_image.json``).

    Raises:
        FileNotFoundError: there is no such dump.
        ValueError: its validation selected no threshold.
    """
    dump = report_path(osp.dirname(osp.abspath(checkpoint)), 'val')
    if not osp.isfile(dump):
        raise FileNotFoundError(
            f'score threshold "val" (--score-thr or test_evaluator.score_thr): {dump} '
            'not found; train with validation and a CellDetMetric with '
            'score_thr_candidates (configs/_base_/datasets/_cell_coco.py), or give a '
            'number: --score-thr 0.5')
    value = read_validation_thr(dump)
    if value is None:
        raise ValueError(f'score threshold "val": {dump} holds no selected threshold '
                         '(pu_score_thr): no candidate found a labeled cell')
    return value


def config_validation_score_thr(checkpoint: str, default: float = 0.5) -> float:
    """The validation threshold a config asks for (``test_evaluator.score_thr='val'``).

    As :func:`validation_score_thr`, except that a validation pass in which no candidate
    found a labeled cell (an untrained detector) falls back to ``default``
    (docs/method.md#metrics) with a warning instead of failing.
    """
    try:
        return validation_score_thr(checkpoint)
    except ValueError as error:
        print_log(f'{error}; testing with score >= {default}', logger='current',
                  level=logging.WARNING)
        return default


def set_test_score_thr(cfg, checkpoint: str, score_thr=None) -> None:
    """Set the score threshold of every test evaluator of ``cfg``: ``score_thr`` (a
    number, or ``'val'`` for :func:`validation_score_thr`), else an evaluator's
    ``score_thr='val'`` is resolved by :func:`config_validation_score_thr`."""
    evaluators = cfg.test_evaluator
    for evaluator in evaluators if isinstance(evaluators, list) else [evaluators]:
        if score_thr == 'val':
            evaluator['score_thr'] = validation_score_thr(checkpoint)
        elif score_thr is not None:
            evaluator['score_thr'] = float(score_thr)
        elif evaluator.get('score_thr') == 'val':
            evaluator['score_thr'] = config_validation_score_thr(checkpoint)
