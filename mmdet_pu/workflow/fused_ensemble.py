"""A fit's trainings fused into one detector: its config, its checkpoint and its
validation and test dumps (docs/method.md#fused-ensemble).

:func:`fused_run` writes, in ``<work dir>/<name>/``, the config of a
:class:`~mmdet_pu.models.detectors.FusedEnsemble` of the trainings (the first
training's dumped config, its model repeated once per training), ``fused.pth`` (each
training's weights under ``members.<i>.``), ``run.json`` and ``last_checkpoint``, then
validates it (``cell_metrics/val_per_image.json``, with the score threshold the
validation selects) and tests it, so that it reads back as a tested
:class:`~.runs.Run`. The config records that validation dump (``validation_dump``,
:mod:`mmdet_pu.evaluation.validation_thr`; :func:`standalone_config`, as the distilled
detector's does), so ``tools/test.py <name>_config.py CHECKPOINT --score-thr val``
finds its threshold wherever the checkpoint lies. Nothing
is trained; a finished one is evaluated again only when its members changed: other
checkpoints or weights, or a checkpoint rewritten in place (its size and modification
time, recorded in ``run.json``).
"""
import os
import os.path as osp
from typing import Callable, List, Optional, Sequence

import torch
from mmengine.config import Config
from mmengine.runner.checkpoint import _load_checkpoint

from cellio.atomic import atomic_open, write_atomic
from cellio.records import write_record
from mmdet_pu.engine.launch import build_runner
from mmdet_pu.evaluation.cell_metric import DUMP_DIR, report_path
from mmdet_pu.evaluation.validation_thr import VALIDATION_DUMP
from mmdet_pu.models.detectors.box_fusion import FUSION_IOU
from mmdet_pu.prior.keys import type_name
from .runs import Run

CHECKPOINT = 'fused.pth'
#: The lowest score each member of a fused detector keeps (mmdet's 0.05; the shipped
#: bases keep every score): fusing every low detection of four members took a fold-1
#: test set (26 images) from about 4 to 14 minutes on the CPU, for +0.000-0.008 AP.
MEMBER_SCORE_FLOOR = 0.05


def dumped_config(run: Run) -> str:
    """The config a training ran with, as its work dir keeps it (options merged)."""
    path = osp.join(run.work_dir, osp.basename(run.config))
    if not osp.isfile(path):
        raise FileNotFoundError(f'{path}: the config {run.name} ran with is missing '
                                '(mmengine writes it when the training starts)')
    return path


def standalone_config(config: str, detector_dir: str = os.curdir) -> Config:
    """``config`` (a run's :func:`dumped_config`) as a fit returns it, to be written into
    a folder from which ``detector_dir`` (default: that folder itself) holds the
    detector's ``cell_metrics/``: that validation dump recorded (``validation_dump``,
    relative to the config), so ``--score-thr val`` reads it wherever the checkpoint
    lies, and its ``work_dir`` dropped, so a test of it without ``--work-dir`` writes into
    ``./work_dirs/<config name>``, as for any config, not over the fit's dumps."""
    cfg = Config.fromfile(config)
    cfg.pop('work_dir', None)
    cfg[VALIDATION_DUMP] = report_path(detector_dir, 'val')
    return cfg


def ensemble_config(member_config: str, num_members: int, iou_thr: float = FUSION_IOU,
                    weights: Optional[Sequence] = None,
                    score_exponents: Optional[Sequence[Sequence[float]]] = None,
                    score_floor: float = MEMBER_SCORE_FLOOR) -> Config:
    """``member_config`` with its model made a ``FusedEnsemble`` of ``num_members``
    (``weights``: the members' shares of the vote, default equal, or per class;
    ``score_exponents``: per member and class, default none), each member keeping
    scores down to ``score_floor``, as a fit returns it (:func:`standalone_config`: its
    validation dump the one :func:`evaluate` writes beside it), without the member's
    ``load_from``. A ``member_config`` that is itself a ``FusedEnsemble``'s gives its
    members' model."""
    cfg = standalone_config(member_config)
    if type_name(cfg.model) == 'FusedEnsemble':
        cfg.model = cfg.model['detector']
    cfg.merge_from_dict({f'model.{score_floor_key(cfg.model)}': score_floor})
    cfg.model = dict(type='FusedEnsemble', detector=cfg.model, num_members=num_members,
                     iou_thr=iou_thr, weights=None if weights is None else list(weights))
    if score_exponents is not None:
        cfg.model['score_exponents'] = [list(row) for row in score_exponents]
    cfg.load_from = None
    return cfg


def score_floor_key(model: dict) -> str:
    """The key, under ``model.``, of the lowest score a detector of config ``model``
    keeps: ``test_cfg.rcnn.score_thr`` (two-stage) or ``test_cfg.score_thr``
    (one-stage); mmdet's configs set 0.05, the shipped bases 0.

    Raises:
        ValueError: ``model.test_cfg`` sets neither.
    """
    test_cfg = model.get('test_cfg') or {}
    if 'score_thr' in (test_cfg.get('rcnn') or {}):
        return 'test_cfg.rcnn.score_thr'
    if 'score_thr' in test_cfg:
        return 'test_cfg.score_thr'
    raise ValueError(f'model.test_cfg of {model.get("type")}: expected rcnn.score_thr '
                     f'or score_thr (the lowest score kept), got {dict(test_cfg)}')


def file_stamps(paths: Sequence[str]) -> List[List[int]]:
    """``[size, modification time in ns]`` of each file: what tells a checkpoint
    rewritten at the same path (a training run again) from the one a fusion was made
    of."""
    return [[os.stat(path).st_size, os.stat(path).st_mtime_ns] for path in paths]


def write_ensemble_checkpoint(checkpoints: Sequence[str], out: str) -> None:
    """One checkpoint holding each of ``checkpoints``' weights under ``members.<i>.``
    (written atomically; ``meta.members`` lists the sources, ``meta.dataset_meta`` is
    the first one's: the classes and resolution tools read)."""
    state_dict, meta = {}, {}
    for index, path in enumerate(checkpoints):
        checkpoint = _load_checkpoint(path, map_location='cpu')
        weights = checkpoint.get('state_dict', checkpoint)
        state_dict.update({f'members.{index}.{key}': value
                           for key, value in weights.items()})
        if index == 0 and 'dataset_meta' in checkpoint.get('meta', {}):
            meta['dataset_meta'] = checkpoint['meta']['dataset_meta']
    meta['members'] = [osp.abspath(p) for p in checkpoints]
    with atomic_open(out, 'wb') as f:
        torch.save(dict(state_dict=state_dict, meta=meta), f)


def _dump_to(evaluator, out_dir: str):
    for metric in evaluator if isinstance(evaluator, list) else [evaluator]:
        metric['out_dir'] = out_dir
    return evaluator


def evaluate(config: str, checkpoint: str, work_dir: str) -> None:
    """Validate and test ``checkpoint`` with ``config``; the dumps go to
    ``<work_dir>/cell_metrics``. ``config`` stays as written: the runner gets a copy
    without its file name, which it dumps as ``<work_dir>/<timestamp>.py``, so the
    dump folder and checkpoint of this evaluation do not end up in the config that
    ``tools/test.py`` is given later."""
    cfg = Config.fromfile(config)
    cfg.work_dir, cfg.load_from = work_dir, checkpoint
    for key in ('val_evaluator', 'test_evaluator'):
        cfg[key] = _dump_to(cfg[key], osp.join(work_dir, DUMP_DIR))
    runner = build_runner(Config(cfg.to_dict()))
    runner.val()
    runner.test()


def fused_run(runs: Sequence[Run], work_dir: str, name: str = 'fused',
              iou_thr: float = FUSION_IOU,
              weights: Optional[Sequence[float]] = None) -> Run:
    """The ``FusedEnsemble`` of the trained ``runs`` (module docstring), evaluated;
    ``weights``: each run's share of the vote (default equal). A finished one is reused
    when its members' checkpoints, their :func:`file_stamps` and the weights are those
    it was made of."""
    weights = None if weights is None else [float(w) for w in weights]
    return ensemble_run(
        osp.join(work_dir, name), name, [run.last_checkpoint() for run in runs],
        lambda: ensemble_config(dumped_config(runs[0]), len(runs), iou_thr, weights),
        dict(weights=weights))


def ensemble_run(out_dir: str, name: str, members: Sequence[str],
                 make_config: Callable[[], Config], settings: dict) -> Run:
    """The ensemble of the checkpoints ``members`` in ``out_dir`` (``<name>_config.py``
    from ``make_config()``, :data:`CHECKPOINT`, ``run.json``), evaluated; a finished one
    is reused when its members, their :func:`file_stamps` and ``settings`` (what else
    the config was made of, JSON values) are those it was made of."""
    config = osp.join(out_dir, f'{name}_config.py')
    checkpoint = osp.join(out_dir, CHECKPOINT)
    made_of = dict(members=list(members), member_stamps=file_stamps(members), **settings)
    ensemble = Run(config, out_dir, [], name=name)
    record = ensemble.record() or {}
    if ensemble.tested() and all(record.get(key) == value
                                 for key, value in made_of.items()):
        return ensemble
    os.makedirs(out_dir, exist_ok=True)
    write_atomic(config, make_config().pretty_text)
    write_ensemble_checkpoint(members, checkpoint)
    write_atomic(osp.join(out_dir, 'last_checkpoint'), checkpoint)
    evaluate(config, checkpoint, out_dir)
    write_record(ensemble.record_file, dict(config=config, options=[], trained=True,
                                            **made_of))
    return ensemble
