"""The own-data workflow's student at other cuts (``tools/distill_cut.py``).

A finished fit (``tools/fit_prior.py``, ``final='distilled'``) trained one student: its
round fine-tuned on the fused detections scoring at least the fused detector's
validation threshold (:func:`~mmdet_pu.workflow.distillation.distillation_cut`), those
from :data:`~mmdet_pu.workflow.distillation.DISTILL_UNCERTAIN_SCORE` up to it ignored.
This study trains the same student again from the same round at each of the given cuts
(``<fit>/distill_cut<cut>/``, its pseudo-labels ``<fit>/distill_cut<cut>_labels.json``),
everything else as the fit's student had it, and tabulates F1 at the metric's threshold,
F1 at each detector's validation threshold, AP and the pooled recall of all its test
detections (its recall ceiling), class by class, beside the fused detector and the fit's
student, and, where the training split's annotation file holds every cell (a benchmark
config, whose ``deletion`` removes the labels the fit did not see), what each student
learned: the precision and recall of its labeled cells plus pseudo-labels against those
complete labels (:func:`label_quality`). The band below a cut starts at the fit's lowest
uncertain score, or at a tenth of the cut where the cut is at or below it, or at a given
score (``band_from``: the fused detections from it up to the cut ignored, so that fewer
cells the members found stay background; ``<fit>/distill_cut<cut>_band<score>/``;
:func:`band_low`); a student that ignored no band ignores none here either. With
``soft`` each student is instead taught every fused detection scoring at least its cut
as a cell weighted by that score (score-weighted distillation: ``pseudo_label_weights``,
the RoI head's soft targets, :class:`~mmdet_pu.models.roi_heads.SoftTargetMixin`), no
band ignored (``<fit>/distill_cut<cut>_soft/``). Runs resume; a label file of another
checkpoint or band is refused (:func:`~mmdet_pu.workflow.self_training.check_pseudo_source`).
"""
import json
import os.path as osp
from typing import Callable, List, Optional, Sequence

import numpy as np

from mmengine.config import Config

from mmdet.registry import MODELS

from cellio.atomic import write_atomic
from cellio.records import read_record
from mmdet_pu.engine.launch import load_config, parse_cfg_options
from mmdet_pu.evaluation.cell_metric import dump_metric, report_path
from mmdet_pu.evaluation.metric_dump import read_metric_dump
from mmdet_pu.evaluation.matching import match_image
from mmdet_pu.evaluation.overlay import read_coco_ground_truth
from mmdet_pu.models.roi_heads import SoftTargetMixin
from mmdet_pu.workflow.distillation import (DISTILL_LABELS, DISTILL_UNCERTAIN_SCORE,
                                            DISTILLED, PSEUDO_LABELS_KEY)
from mmdet_pu.workflow.fit_report import read_fit_summary
from mmdet_pu.workflow.pseudo_labels import ignore_options
from mmdet_pu.workflow.runs import Run, run_all
from mmdet_pu.workflow.self_training import check_pseudo_source, write_source_labels
from studies.comparison import RANKING, load_runs


def band_low(cut: float, band_from: Optional[float] = None) -> float:
    """The lowest score of the ignored band below ``cut``: ``band_from`` where given,
    else the workflow's :data:`DISTILL_UNCERTAIN_SCORE`, or ``cut / 10`` where the cut is
    at or below it.

    Raises:
        ValueError: ``band_from`` is not a score in (0, ``cut``).
    """
    if band_from is None:
        return DISTILL_UNCERTAIN_SCORE if cut > DISTILL_UNCERTAIN_SCORE else cut / 10
    if not 0 < band_from < cut:
        raise ValueError(f'band from {band_from:g}: expected a score in (0, {cut:g}), '
                         'below the cut')
    return band_from


def probe_name(cut: float, soft: bool = False, band_from: Optional[float] = None) -> str:
    """The folder (and label-file prefix) of the student at ``cut`` (``soft``: taught
    the detections weighted by their scores; ``band_from``: the band's given start)."""
    band = '' if band_from is None else f'_band{band_from:g}'
    return f'distill_cut{cut:g}{band}' + ('_soft' if soft else '')


def soft_target_options(config: str, options: Sequence[str]) -> List[str]:
    """The options that weigh the pseudo-labels of a student of ``config`` with
    ``options`` by their scores: ``pseudo_label_weights`` and the training pipeline's
    ``PackDetInputs`` replaced by ``PackCellInputs``, which packs the weights.

    Raises:
        ValueError: the RoI head cannot learn soft targets, or the pipeline packs with
            neither transform.
    """
    cfg = load_config(config, parse_cfg_options(list(options)))
    head = MODELS.get(cfg.model.roi_head.bbox_head.type)
    if head is None or not issubclass(head, SoftTargetMixin):
        raise ValueError(f'{config}: bbox_head {cfg.model.roi_head.bbox_head.type} learns '
                         'no soft targets; expected a head with SoftTargetMixin, e.g. '
                         'BoxFitShared2FCBBoxHead')
    pipeline = cfg.train_dataloader.dataset.pipeline
    packs = [i for i, t in enumerate(pipeline)
             if t['type'] in ('PackDetInputs', 'PackCellInputs')]
    if not packs:
        raise ValueError(f'{config}: the training pipeline has no PackDetInputs or '
                         'PackCellInputs to pack the weights')
    return ['train_dataloader.dataset.pseudo_label_weights=True',
            f'train_dataloader.dataset.pipeline.{packs[-1]}.type=PackCellInputs']


def probe_options(options: Sequence[str], labels: str) -> List[str]:
    """The fit's student's ``options`` with its pseudo-labels replaced by ``labels``.

    Raises:
        ValueError: no option gives the training dataset its pseudo-labels.
    """
    key = f'{PSEUDO_LABELS_KEY}='
    if not any(option.startswith(key) for option in options):
        raise ValueError(f'the student\'s options hold no {key}...: not a distilled '
                         'student of tools/fit_prior.py')
    return [f'{key}{labels}' if option.startswith(key) else option for option in options]


def student_record(fit_dir: str) -> dict:
    """The fit's student's ``run.json`` (config and options).

    Raises:
        ValueError: the fit has no trained student (the file is named).
    """
    path = osp.join(fit_dir, DISTILLED, 'run.json')
    record = read_record(path)
    if not record or not record.get('trained'):
        raise ValueError(f'{path}: no trained student; run tools/fit_prior.py to the end '
                         '(its default --final distilled) first')
    return record


def cut_run(fit_dir: str, cut: float, echo: Callable[[str], None],
            soft: bool = False, band_from: Optional[float] = None) -> Run:
    """The student of the fit in ``fit_dir`` at ``cut``, its pseudo-labels written
    first if absent (module docstring).

    Raises:
        ValueError: ``band_from`` for a soft student or a fit whose student ignored no
            band, or not below ``cut``.
    """
    teacher = read_fit_summary(fit_dir)['fused']
    student = student_record(fit_dir)
    ignoring = ignore_options(Config.fromfile(student['config']).model.train_cfg)
    band = bool(ignoring) and set(ignoring) <= set(student['options']) and not soft
    if band_from is not None and not band:
        raise ValueError(f'{fit_dir}: band from {band_from:g} asked, but this student '
                         'ignores no band (' + ('soft targets' if soft else
                                                'its assigners ignore nothing') + ')')
    uncertain_thr: Optional[float] = band_low(cut, band_from) if band else None
    name = probe_name(cut, soft, band_from)
    labels = osp.abspath(osp.join(fit_dir, f'{name}_labels.json'))
    check_pseudo_source(labels, teacher['checkpoint'], uncertain_thr, name, cut)
    options = probe_options(student['options'], labels)
    if soft:
        options += soft_target_options(student['config'], options)
    if not osp.isfile(labels):
        write_source_labels(student['config'], labels, [], teacher, uncertain_thr, echo,
                            score_thr=cut)
    return Run(student['config'], osp.join(fit_dir, name), options, name=name)


def recall_ceiling(report: dict, cls: str) -> float:
    """The recall ceiling of class ``cls`` in the test dump ``report``: the
    ``max_recall`` :class:`~mmdet_pu.evaluation.cell_metric.CellDetMetric` records (the
    share of the class's cells some detection of the class matches, whatever its score;
    NaN for a class without cells).

    Raises:
        KeyError: the dump predates ``max_recall``; test the run again.
    """
    value = dump_metric(report, f'{cls}/max_recall')
    return float('nan') if value is None else float(value)


def complete_labels(config: str, options: Sequence[str]) -> Optional[str]:
    """The training split's annotation file of ``config`` with ``options`` when its
    dataset deletes labels (the file then holds every cell), else None: a user's own
    partial labels have no complete ones to compare with."""
    dataset = load_config(config, parse_cfg_options(list(options))).train_dataloader.dataset
    if not dataset.get('deletion') or not dataset.get('ann_file'):
        return None
    return osp.join(dataset.get('data_root') or '', dataset.ann_file)


def label_quality(labels: str, ann_file: str) -> dict:
    """What a student learned, against the complete labels of its training split
    (``ann_file``, COCO): ``precision`` and ``recall`` of the labeled cells plus the
    pseudo-labels of the file ``labels`` (:mod:`~mmdet_pu.workflow.pseudo_labels`), all
    classes together, a pseudo-label a cell when it overlaps a cell not yet taken at
    IoU >= 0.5 (the labeled cells are cells, and no pseudo-label is one of them), and
    ``pseudo`` (their number).

    Raises:
        ValueError: the label file names an image ``ann_file`` does not hold.
    """
    with open(labels) as f:
        content = json.load(f)
    cells = {name: boxes for name, boxes, _ in read_coco_ground_truth(ann_file)[0].values()}
    unknown = sorted(set(content['images']) - set(cells))
    if unknown:
        raise ValueError(f'{labels}: image {unknown[0]!r} is not in {ann_file}; the labels '
                         'were written on another split')
    found = 0
    for name, pseudo in content['images'].items():
        boxes = np.asarray(pseudo, dtype=np.float64).reshape(-1, 5)[:, :4]
        ones, zeros = np.ones(len(boxes)), np.zeros(len(boxes), dtype=np.int64)
        match = match_image(boxes, ones, zeros, cells[name],
                            np.zeros(len(cells[name]), dtype=np.int64), score_thr=0.0)
        found += int(match.pred_tp.sum())
    named = content['labeled'] + content['pseudo']
    total = sum(len(boxes) for boxes in cells.values())
    return dict(pseudo=content['pseudo'],
                precision=(content['labeled'] + found) / named if named else float('nan'),
                recall=(content['labeled'] + found) / total if total else float('nan'))


def measured(name: str, run_dir: str, labels: Optional[str] = None,
             ann_file: Optional[str] = None) -> List[dict]:
    """The table's rows of the tested run in ``run_dir``, one per class (``cls``); with
    the student's ``labels`` and the complete ``ann_file`` of its training split, their
    :func:`label_quality` (all classes together, on every row; ``labels``: None for the
    fused detector, which learned none)."""
    report = report_path(run_dir)
    method = load_runs(name, [report])
    dump = read_metric_dump(report)
    learned = (label_quality(labels, ann_file) if labels and ann_file else None)
    return [dict(name=name, cls=cls, run_dir=run_dir,
                 val_score_thr=method.val_score_thrs[0],
                 recall_ceiling=recall_ceiling(dump, cls), labels=learned,
                 **{measure: float(method.values[(cls, measure)][0])
                    for measure in RANKING})
            for cls in method.classes]


def run_study(fit_dir: str, cuts: Sequence[float], echo: Callable[[str], None] = print,
              jobs: int = 1, soft: bool = False,
              band_from: Optional[float] = None) -> List[dict]:
    """Train and test the students at ``cuts`` (``soft``: score-weighted; ``band_from``:
    the ignored band's start); the rows of the fused detector, the fit's student and each
    cut's, one per class (:func:`measured`)."""
    runs = [cut_run(fit_dir, cut, echo, soft, band_from) for cut in cuts]
    run_all(runs, jobs=jobs, echo=echo)
    student = student_record(fit_dir)
    ann_file = complete_labels(student['config'], student['options'])
    return [*measured('fused', osp.join(fit_dir, 'fused')),
            *measured(DISTILLED, osp.join(fit_dir, DISTILLED),
                      osp.join(fit_dir, DISTILL_LABELS), ann_file),
            *(row for run in runs
              for row in measured(run.name, run.work_dir,
                                  osp.join(fit_dir, f'{run.name}_labels.json'), ann_file))]


def format_rows(rows: Sequence[dict]) -> str:
    """A Markdown table of :func:`run_study`'s rows, with a class column where they hold
    several classes."""
    classes = len({row['cls'] for row in rows}) > 1
    lines = ['| detector |' + (' class |' if classes else '') + ' F1 at the test threshold '
             '| F1 at its validation threshold (thr.) | AP | recall ceiling | '
             'pseudo-labels: precision, recall |',
             '|---|' + ('---|' if classes else '') + '---|---|---|---|---|']
    for row in rows:
        thr = '-' if row['val_score_thr'] is None else f'{row["val_score_thr"]:g}'
        learned = row.get('labels')
        labels = ('-' if not learned else f'{learned["pseudo"]:,}: '
                  f'{learned["precision"]:.3f}, {learned["recall"]:.3f}')
        cls = f' {row["cls"]} |' if classes else ''
        lines.append(f'| {row["name"]} |{cls} {row["f1"]:.3f} | {row["f1_val"]:.3f} '
                     f'({thr}) | {row["ap"]:.3f} | {row["recall_ceiling"]:.3f} | '
                     f'{labels} |')
    return '\n'.join(lines)


def write_study(fit_dir: str, rows: Sequence[dict]) -> str:
    """Write ``<fit>/distill_cut.md`` and ``.json``; returns the table."""
    table = format_rows(rows)
    write_atomic(osp.join(fit_dir, 'distill_cut.md'), table + '\n')
    write_atomic(osp.join(fit_dir, 'distill_cut.json'), json.dumps(list(rows), indent=1))
    return table
