"""Test (and evaluate) a detector: MMDetection's ``tools/test.py`` with mmdet_pu.

Usage::

    python tools/test.py CONFIG CHECKPOINT [--work-dir DIR] [--out FILE.pkl]
        [--show-dir DIR [--overlay-style box|dot]] [--score-thr T|val]
        [--cfg-options k=v ...] [--launcher none|pytorch|slurm|mpi]

Whole-image tiled inference is selected by the config (``test_cfg =
dict(type='TiledTestLoop', ...)`` in the dataset bases); a plain checkpoint is used as is.
``--show-dir`` writes TP/FP/FN overlays (``CellOverlayHook``) with the matching settings
of the config's ``CellDetMetric``.

``--score-thr`` replaces the metric's score threshold (0.5 in the shipped configs,
docs/method.md#metrics): a number, or ``val`` for the threshold selected on the
validation set at the end of training (``cell/pu_score_thr`` in ``<checkpoint
dir>/cell_metrics/val_per_image.json``, written by a ``CellDetMetric`` with
``score_thr_candidates``; see :mod:`mmdet_pu.evaluation.score_threshold`). A config can
ask for the same with ``test_evaluator = dict(score_thr='val')`` (or ``--cfg-options
test_evaluator.score_thr=val``; ``tools/demo.py`` and ``tools/repeat.py`` pass their
options to every run); then a validation pass that found no labeled cell falls back to
0.5 with a warning. The command line wins over the config.
"""
import argparse
import json
import logging
import math
import os
import os.path as osp

from mmengine.config import DictAction
from mmengine.logging import print_log

import mmdet_pu  # noqa: F401  (registers modules, patches checkpoint loading)
from mmdet.engine.hooks.utils import trigger_visualization_hook
from mmdet.evaluation import DumpDetResults
from mmdet_pu.evaluation import add_overlay_hook
from mmdet_pu.launch import build_runner, load_config


def parse_args():
    parser = argparse.ArgumentParser(description='Test (and evaluate) a detector')
    parser.add_argument('config', help='test config file path')
    parser.add_argument('checkpoint', help='checkpoint file')
    parser.add_argument(
        '--work-dir', help='the dir to save evaluation metrics and dumps')
    parser.add_argument(
        '--out', type=str, help='dump predictions to a pickle file')
    parser.add_argument(
        '--show', action='store_true', help='show prediction results')
    parser.add_argument(
        '--show-dir',
        help='save TP (green) / FP (red) / FN (yellow) overlays of every test image '
        'to work_dir/timestamp/SHOW_DIR (an absolute path is used as is)')
    parser.add_argument(
        '--overlay-style', default='box', choices=['box', 'dot'],
        help="overlays draw boxes, or dots at box centres for crowded images")
    parser.add_argument(
        '--score-thr', help="score threshold of the metric: a number, or 'val' for the "
        'one selected on the validation set during training')
    parser.add_argument(
        '--wait-time', type=float, default=2, help='the interval of show (s)')
    parser.add_argument(
        '--cfg-options', nargs='+', action=DictAction,
        help='override config settings')
    parser.add_argument(
        '--launcher', choices=['none', 'pytorch', 'slurm', 'mpi'],
        default='none', help='job launcher')
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)
    args = parser.parse_args()
    if 'LOCAL_RANK' not in os.environ:
        os.environ['LOCAL_RANK'] = str(args.local_rank)
    return args


def validation_score_thr(checkpoint):
    """``cell/pu_score_thr`` of the validation dump beside ``checkpoint``."""
    dump = osp.join(osp.dirname(osp.abspath(checkpoint)), 'cell_metrics',
                    'val_per_image.json')
    if not osp.isfile(dump):
        raise FileNotFoundError(
            f'score threshold "val" (--score-thr or test_evaluator.score_thr): {dump} '
            'not found; train with validation and a CellDetMetric with '
            'score_thr_candidates (configs/_base_/datasets/_cell_coco.py), or give a '
            'number: --score-thr 0.5')
    with open(dump) as f:
        metrics = json.load(f)['metrics']
    value = next((v for k, v in metrics.items() if k.split('/')[-1] == 'pu_score_thr'),
                 None)
    if value is None or math.isnan(value):
        raise ValueError(f'score threshold "val": {dump} holds no selected threshold '
                         '(pu_score_thr): no candidate found a labeled cell')
    return value


def config_validation_score_thr(checkpoint, default=0.5):
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


def build_cfg(args):
    cfg = load_config(args.config, args.cfg_options, args.work_dir, args.launcher)
    cfg.load_from = args.checkpoint
    evaluators = cfg.test_evaluator
    for evaluator in evaluators if isinstance(evaluators, list) else [evaluators]:
        if args.score_thr == 'val':
            evaluator['score_thr'] = validation_score_thr(args.checkpoint)
        elif args.score_thr is not None:
            evaluator['score_thr'] = float(args.score_thr)
        elif evaluator.get('score_thr') == 'val':
            evaluator['score_thr'] = config_validation_score_thr(args.checkpoint)
    if args.show:
        # mmdet's hook only shows the pictures; --show-dir files come from the overlays
        cfg = trigger_visualization_hook(
            cfg, argparse.Namespace(show=True, wait_time=args.wait_time, show_dir=None))
    if args.show_dir:
        add_overlay_hook(cfg, args.show_dir, style=args.overlay_style)
    return cfg


def main():
    args = parse_args()
    cfg = build_cfg(args)
    runner = build_runner(cfg)
    if args.out is not None:
        if not args.out.endswith(('.pkl', '.pickle')):
            raise ValueError(f'--out {args.out}: expected a .pkl/.pickle file')
        runner.test_evaluator.metrics.append(
            DumpDetResults(out_file_path=args.out))
    runner.test()


if __name__ == '__main__':
    main()
