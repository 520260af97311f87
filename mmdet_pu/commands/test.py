"""Test (and evaluate) a detector: MMDetection's ``tools/test.py`` with mmdet_pu.

Usage (``tools/test.py`` is the same command line)::

    python -m mmdet_pu.commands.test CONFIG CHECKPOINT [--work-dir DIR] [--out FILE.pkl]
        [--show-dir DIR [--overlay-style box|dot]] [--score-thr T|val] [--tta]
        [--cfg-options k=v ...] [--launcher none|pytorch|slurm|mpi]

Whole-image tiled inference is selected by the config (``test_cfg =
dict(type='TiledTestLoop', ...)`` in the dataset bases); a plain checkpoint is used as is.
``--show-dir`` writes TP/FP/FN overlays (``CellOverlayHook``) with the matching settings
of the config's ``CellDetMetric``.

``--score-thr`` replaces the metric's score threshold (0.5 in the shipped configs,
docs/method.md#metrics): a number, or ``val`` for the threshold selected on the
validation set at the end of training (``cell/pu_score_thr`` in ``<checkpoint
dir>/cell_metrics/val_per_image.json``, or in the dump the config records as
``validation_dump``, as a fit's ``fit_prior_config.py`` does; written by a
``CellDetMetric`` with ``score_thr_candidates``; see
:mod:`mmdet_pu.evaluation.score_threshold` and
:func:`mmdet_pu.evaluation.validation_thr.set_test_score_thr`). A config
can ask for the same with ``test_evaluator = dict(score_thr='val')`` (or ``--cfg-options
test_evaluator.score_thr=val``; ``tools/demo.py`` and ``tools/repeat.py`` pass their
options to every run); then a validation pass that found no labeled cell falls back to
0.5 with a warning. The command line wins over the config. A threshold that cannot be
had (no dump, no selected threshold) ends the command with a one-line message (status 2).

``--tta`` adds test-time flips to the tiled test loop: every tile is also predicted
mirrored left-right, up-down and both, and the four views' detections are fused
(:mod:`mmdet_pu.engine.runner.test_flips`, docs/method.md#test-time-flips; four times the
inference). The validation threshold that ``--score-thr val`` reads was selected without
flips. A config whose test loop is not a ``TiledTestLoop`` (or a registered subclass of
it) is refused (status 2).
"""
import argparse
import sys

from mmengine.config import DictAction

from cellio.cli import add_launcher_arguments, parse_launch_args, score_thr_or_val
from mmdet.engine.hooks.utils import trigger_visualization_hook
from mmdet.evaluation import DumpDetResults
from mmdet.registry import LOOPS
from mmdet_pu.engine.launch import build_runner, load_test_config
from mmdet_pu.engine.runner import TiledTestLoop
from mmdet_pu.engine.runner.test_flips import TTA_FLIPS
from mmdet_pu.evaluation.validation_thr import ValidationThrError


class TTAError(ValueError):
    """``--tta`` asked of a config it cannot serve."""


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
        '--score-thr', type=score_thr_or_val,
        help="score threshold of the metric: a score in [0, 1], or 'val' for the one "
        'selected on the validation set during training')
    parser.add_argument(
        '--tta', action='store_true',
        help='test-time flips: fuse the detections of every tile as is and mirrored in '
        'three directions (tiled test loops)')
    parser.add_argument(
        '--wait-time', type=float, default=2, help='the interval of show (s)')
    parser.add_argument(
        '--cfg-options', nargs='+', action=DictAction,
        help='override config settings')
    add_launcher_arguments(parser)
    args = parse_launch_args(parser)
    if args.out is not None and not args.out.endswith(('.pkl', '.pickle')):
        parser.error(f'--out {args.out}: expected a .pkl/.pickle file')
    return args


def is_tiled_test_loop(loop_type) -> bool:
    """Whether a ``test_cfg`` type (a registered name or a class) is ``TiledTestLoop``
    or a subclass of it, so that it takes ``flips``."""
    if isinstance(loop_type, str):
        loop_type = LOOPS.get(loop_type)
    return isinstance(loop_type, type) and issubclass(loop_type, TiledTestLoop)


def build_cfg(args):
    cfg = load_test_config(args.config, args.checkpoint, args.cfg_options, args.work_dir,
                           args.launcher, args.score_thr, args.show_dir, args.overlay_style)
    if args.tta:
        loop_type = cfg.test_cfg.get('type')
        if not is_tiled_test_loop(loop_type):
            raise TTAError('--tta: expected a tiled test loop (test_cfg type TiledTestLoop '
                           f'or a subclass), {args.config} has {loop_type!r}')
        cfg.test_cfg.flips = list(TTA_FLIPS)
    if args.show:
        # mmdet's hook only shows the pictures; --show-dir files come from the overlays
        cfg = trigger_visualization_hook(
            cfg, argparse.Namespace(show=True, wait_time=args.wait_time, show_dir=None))
    return cfg


def main():
    args = parse_args()
    try:
        cfg = build_cfg(args)
    except (ValidationThrError, TTAError) as error:  # what to do, not a traceback
        print(f'test.py: error: {error}', file=sys.stderr)
        sys.exit(2)
    runner = build_runner(cfg)
    if args.out is not None:
        runner.test_evaluator.metrics.append(
            DumpDetResults(out_file_path=args.out))
    runner.test()


if __name__ == '__main__':
    main()
