"""The score threshold a test takes from the validation of its training.

A test evaluator's ``score_thr`` may be ``'val'`` (in the config, or ``--score-thr val``
of the test command line and of ``tools/infer_slide.py``): the threshold Lee & Liu's
criterion selected on the validation set at the end of training
(:mod:`.score_threshold`), read from the validation dump
(:func:`.metric_dump.read_validation_thr`). That dump is the one the config records
(``validation_dump``, relative to the config's folder: the config a fit returns,
``fit_prior_config.py``, docs/method.md#distilled-detector), else the one beside the
checkpoint (``<checkpoint dir>/cell_metrics/val_per_image.json``).
"""
import logging
import os.path as osp

from mmengine.logging import print_log

from .cell_metric import report_path
from .metric_dump import read_validation_thr

#: The config key of a detector's validation dump, relative to the config's folder.
VALIDATION_DUMP = 'validation_dump'


class ValidationThrError(ValueError):
    """The validation threshold asked for cannot be had: the message says why and what
    to do (the command lines print it as one line)."""


class ValidationDumpMissing(ValidationThrError, FileNotFoundError):
    """The validation dump a threshold is read from does not exist."""


def validation_dump(checkpoint: str, cfg=None) -> str:
    """The validation dump of ``checkpoint``: the config's ``validation_dump`` (relative
    to the folder of ``cfg.filename``), else ``<checkpoint dir>/cell_metrics/
    val_per_image.json``."""
    recorded = None if cfg is None else cfg.get(VALIDATION_DUMP, None)
    if recorded:
        return osp.normpath(osp.join(osp.dirname(osp.abspath(cfg.filename)), recorded))
    return report_path(osp.dirname(osp.abspath(checkpoint)), 'val')


def validation_score_thr(checkpoint: str, cfg=None) -> float:
    """``pu_score_thr`` of the validation dump of ``checkpoint`` (:func:`validation_dump`).

    Raises:
        ValidationDumpMissing: there is no such dump.
        ValidationThrError: its validation selected no threshold.
    """
    dump = validation_dump(checkpoint, cfg)
    if not osp.isfile(dump):
        raise ValidationDumpMissing(
            f'score threshold "val" (--score-thr or test_evaluator.score_thr): {dump} '
            'not found; train with validation and a CellDetMetric with '
            'score_thr_candidates (configs/_base_/datasets/_cell_coco.py), rerun '
            'tools/fit_prior.py for its fused detector, or give a number: --score-thr 0.5')
    value = read_validation_thr(dump)
    if value is None:
        raise ValidationThrError(
            f'score threshold "val": {dump} holds no selected threshold (pu_score_thr): '
            'no candidate found a labeled cell; give a number: --score-thr 0.5')
    return value


def config_validation_score_thr(checkpoint: str, cfg=None, default: float = 0.5) -> float:
    """The validation threshold a config asks for (``test_evaluator.score_thr='val'``).

    As :func:`validation_score_thr`, except that a validation pass in which no candidate
    found a labeled cell (an untrained detector) falls back to ``default``
    (docs/method.md#metrics) with a warning instead of failing.
    """
    try:
        return validation_score_thr(checkpoint, cfg)
    except ValidationDumpMissing:
        raise
    except ValidationThrError as error:
        print_log(f'{error}; testing with score >= {default}', logger='current',
                  level=logging.WARNING)
        return default


def resolve_score_thr(cfg, checkpoint: str, score_thr=None, configured=None):
    """The threshold a test of ``checkpoint`` takes: ``score_thr`` (a number, or
    ``'val'`` for :func:`validation_score_thr`), else ``configured`` (an evaluator's
    ``score_thr``: ``'val'`` for :func:`config_validation_score_thr`, a number as is,
    None for none)."""
    if score_thr == 'val':
        return validation_score_thr(checkpoint, cfg)
    if score_thr is not None:
        return float(score_thr)
    if configured == 'val':
        return config_validation_score_thr(checkpoint, cfg)
    return configured


def _test_evaluators(cfg) -> list:
    evaluators = cfg.get('test_evaluator', None) or []
    return evaluators if isinstance(evaluators, list) else [evaluators]


def set_test_score_thr(cfg, checkpoint: str, score_thr=None) -> None:
    """Set the score threshold of every test evaluator of ``cfg`` by
    :func:`resolve_score_thr` (the command line's ``score_thr`` wins over the
    evaluator's own)."""
    for evaluator in _test_evaluators(cfg):
        value = resolve_score_thr(cfg, checkpoint, score_thr, evaluator.get('score_thr'))
        if value is not None:
            evaluator['score_thr'] = value


def detector_score_thr(cfg, checkpoint: str, score_thr=None,
                       default: float = 0.5) -> float:
    """The score threshold a detector's detections are kept at outside a test (slide
    inference): ``score_thr`` (a number or ``'val'``), else the config's test threshold
    (the first test evaluator's ``score_thr``), resolved as a test resolves it
    (:func:`resolve_score_thr`), else ``default``."""
    configured = next(
        (e['score_thr'] for e in _test_evaluators(cfg) if e.get('score_thr') is not None),
        None)
    value = resolve_score_thr(cfg, checkpoint, score_thr, configured)
    return default if value is None else float(value)
