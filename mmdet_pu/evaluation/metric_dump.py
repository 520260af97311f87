"""The one reader of the per-image dumps of :class:`~.cell_metric.CellDetMetric`.

The metric writes ``<work dir>/cell_metrics/<stage>_per_image.json``
(:func:`~.cell_metric.report_path`; ``stage`` is ``val`` at the end of training,
``test`` when a checkpoint is tested): the classes, the summary ``metrics`` (prefixed,
``cell/avg_f1``; undefined values are null), the score-threshold selection and, per
image, the counts, rates and ranked detections. Every reader of such a file, a
comparison of runs, a scheduled run's state, the prior selection, the validation
threshold of a test, goes through :func:`read_metric_dump`.
"""
import json
import math
from typing import Optional, Sequence

#: The fields every dump has, which :func:`read_metric_dump` checks by default.
SUMMARY_FIELDS = ('metrics', )
#: The fields a comparison of runs reads, image by image.
PER_IMAGE_FIELDS = ('classes', 'metrics', 'images')


def read_metric_dump(path: str, fields: Sequence[str] = SUMMARY_FIELDS) -> dict:
    """The per-image dump ``path`` of ``CellDetMetric`` (loaded JSON), checked for
    ``fields``.

    Raises:
        OSError: the file cannot be read.
        ValueError: it is not JSON or lacks one of ``fields`` (the message names the
            file).
    """
    with open(path) as f:
        try:
            report = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f'{path}: not valid JSON ({e}); expected a per-image dump '
                             'of CellDetMetric (rerun tools/test.py)') from e
    for field in fields:
        if not isinstance(report, dict) or field not in report:
            raise ValueError(f'{path}: field {field!r} missing; expected a per-image '
                             'dump of CellDetMetric')
    return report


def read_validation_thr(dump: str) -> Optional[float]:
    """The threshold a validation dump of ``CellDetMetric`` selected (``pu_score_thr``,
    :mod:`.score_threshold`).

    Returns None when it selected none: no candidate found a labeled cell, or the
    validation metric had no candidates.

    Raises:
        OSError: the dump cannot be read.
        ValueError: it is not a dump (:func:`read_metric_dump`).
    """
    metrics = read_metric_dump(dump)['metrics']
    value = next((v for k, v in metrics.items() if k.split('/')[-1] == 'pu_score_thr'),
                 None)
    return None if value is None or math.isnan(value) else float(value)
