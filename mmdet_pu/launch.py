"""Config loading, runner building, process groups, command-line values and the report
of user errors shared by the tools (and the ``data_prep`` converters)."""
import argparse
import logging
import os
import os.path as osp
import sys
from datetime import timedelta
from typing import Optional, Tuple

import torch
import torch.distributed as dist
from mmengine.config import Config, DictAction
from mmengine.dist import get_dist_info, init_dist
from mmengine.logging import print_log
from mmengine.registry import RUNNERS
from mmengine.runner import Runner

from mmdet_pu.datasets.deletion import apply_deletion
from mmdet_pu.evaluation.cell_metric import report_path
from mmdet_pu.evaluation.overlay_hook import add_overlay_hook
from mmdet_pu.evaluation.score_threshold import read_validation_thr

LAUNCHERS = ('none', 'pytorch', 'slurm', 'mpi')
#: Timeout of the process group of :func:`init_distributed`: its final barrier waits for
#: the slowest process.
DIST_TIMEOUT = timedelta(days=7)


def add_launcher_arguments(parser) -> None:
    """``--launcher`` and the ``--local-rank`` that ``torch.distributed.launch`` passes
    (torch >= 2.0), as mmdet's tools take them."""
    parser.add_argument('--launcher', choices=LAUNCHERS, default='none', help='job launcher')
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)


def parse_launch_args(parser, argv=None):
    """``parser.parse_args(argv)``; ``LOCAL_RANK`` is set from ``--local-rank`` unless the
    launcher set it."""
    args = parser.parse_args(argv)
    if 'LOCAL_RANK' not in os.environ:
        os.environ['LOCAL_RANK'] = str(args.local_rank)
    return args


def parse_cfg_options(options):
    """``['a.b=1', ...]`` as the dict mmengine's ``DictAction`` builds for the tools'
    ``--cfg-options`` ({} for none): for tools that pass options on to other tools and
    read the config themselves too."""
    if not options:
        return {}
    parser = argparse.ArgumentParser()
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    return parser.parse_args(['--cfg-options', *options]).cfg_options


def load_config(config, cfg_options=None, work_dir=None, launcher='none'):
    """Read ``config`` the way mmdet's tools do and prepare it for ``launcher``.

    ``--cfg-options`` are merged, then the config's ``deletion`` is handed to its loaders
    (:func:`~mmdet_pu.datasets.deletion.apply_deletion`, as ``CellRunner`` does), so
    tools that build datasets from the config see the runner's. The work dir is
    ``work_dir``, the config's own ``work_dir``, or ``./work_dirs/<config name>``.
    Without a GPU, a distributed launch runs on CPUs (see :func:`use_cpu_distributed`).
    """
    cfg = Config.fromfile(config)
    cfg.launcher = launcher
    if cfg_options is not None:
        cfg.merge_from_dict(cfg_options)
    cfg = apply_deletion(cfg)
    if work_dir is not None:
        cfg.work_dir = work_dir
    elif cfg.get('work_dir', None) is None:
        cfg.work_dir = osp.join('./work_dirs', osp.splitext(osp.basename(config))[0])
    if launcher != 'none' and not torch.cuda.is_available():
        use_cpu_distributed(cfg)
    return cfg


def load_test_config(config, checkpoint, cfg_options=None, work_dir=None,
                     launcher='none', score_thr=None, show_dir=None, overlay_style='box'):
    """The config ``tools/test.py CONFIG CHECKPOINT`` tests with: :func:`load_config`,
    ``load_from`` the checkpoint, the test score threshold (:func:`set_test_score_thr`:
    a number, ``'val'``, or the config's own) and, with ``show_dir``, the TP/FP/FN
    overlays (:func:`~mmdet_pu.evaluation.add_overlay_hook`)."""
    cfg = load_config(config, cfg_options, work_dir, launcher)
    cfg.load_from = checkpoint
    set_test_score_thr(cfg, checkpoint, score_thr)
    if show_dir:
        add_overlay_hook(cfg, show_dir, style=overlay_style)
    return cfg


def last_checkpoint(work_dir: str) -> str:
    """The checkpoint a training in ``work_dir`` saved last (its ``last_checkpoint``)."""
    with open(osp.join(work_dir, 'last_checkpoint')) as f:
        return f.read().strip()


def build_runner(cfg):
    """The runner a config asks for, as mmdet's tools build it: ``runner_type``
    (``CellRunner`` in every shipped config, which applies the config's ``deletion``)
    or mmengine's ``Runner``."""
    return RUNNERS.build(cfg) if 'runner_type' in cfg else Runner.from_cfg(cfg)


def use_cpu_distributed(cfg):
    """Run a distributed job on CPUs: gloo process group, DDP without device ids.

    mmengine 0.10's own initialisation calls ``torch.cuda.set_device`` and wraps the
    model with ``device_ids=[LOCAL_RANK]``, both of which need a GPU. The process group
    is created here from the launcher's environment (``torchrun`` sets it; mmengine then
    skips its initialisation) and DDP is told the model lives on the CPU.
    """
    join_cpu_process_group(cfg.launcher)
    cfg.setdefault('env_cfg', {}).setdefault('dist_cfg', {})['backend'] = 'gloo'
    wrapper = dict(type='MMDistributedDataParallel', broadcast_buffers=False,
                   find_unused_parameters=cfg.get('find_unused_parameters', False))
    wrapper.update(cfg.get('model_wrapper_cfg', None) or {})
    wrapper['device_ids'] = None
    cfg.model_wrapper_cfg = wrapper


def join_cpu_process_group(launcher: str, timeout: Optional[timedelta] = None) -> None:
    """Join the gloo process group of a CPU run from torchrun's environment (unless this
    process is in one already): the one process-group setup without a GPU, for training
    (:func:`use_cpu_distributed`) and for :func:`init_distributed`.

    Raises:
        ValueError: ``launcher`` is not ``'pytorch'`` (torchrun).
    """
    if launcher != 'pytorch':
        raise ValueError(f'--launcher {launcher} without a GPU is not supported; start '
                         'the processes with torchrun (--launcher pytorch) for CPU runs')
    if not dist.is_initialized():
        dist.init_process_group(backend='gloo', timeout=timeout)


def init_distributed(launcher: str, timeout: timedelta = DIST_TIMEOUT) -> Tuple[int, int]:
    """Join the process group of ``launcher`` (``'none'``, ``'pytorch'``: torchrun,
    ``'slurm'``: srun) for a job that only exchanges objects and waits at its end (a
    cohort of slides); returns ``(rank, world_size)``.

    The group uses gloo: on GPUs through mmengine's ``init_dist`` (which also picks the
    process's GPU, ``LOCAL_RANK``), on CPUs from torchrun's environment
    (:func:`join_cpu_process_group`). ``timeout`` bounds the wait of the final barrier
    for the slowest process.

    Raises:
        ValueError: an unknown launcher, or Slurm without a GPU.
    """
    if launcher == 'none':
        return 0, 1
    if launcher not in ('pytorch', 'slurm'):
        raise ValueError(f'--launcher must be none, pytorch or slurm, got {launcher!r}')
    if not dist.is_initialized():
        if torch.cuda.is_available():
            init_dist(launcher, backend='gloo', timeout=int(timeout.total_seconds()))
        else:
            join_cpu_process_group(launcher, timeout)
    return get_dist_info()


def close_distributed() -> None:
    """Leave the process group of :func:`init_distributed` (if any)."""
    if dist.is_initialized():
        dist.destroy_process_group()


# ------------------------------------------------------------ command-line errors --

#: Exceptions that describe bad input (data, paths, options, a config) rather than a bug:
#: the code the tools and converters call raises ValueError naming the file, line or
#: option, and OSError for missing files.
USER_ERRORS = (ValueError, OSError)
#: :data:`USER_ERRORS` and what the tools that schedule trainings in subprocesses also
#: report without a traceback: a config key that does not exist (``KeyError``) and runs
#: that failed (``RuntimeError``, naming their logs).
RUN_ERRORS = USER_ERRORS + (KeyError, RuntimeError)


def report_user_errors(main, argv=None, errors=USER_ERRORS) -> int:
    """Run a command-line ``main(argv)``; return its exit status (for ``sys.exit``).

    One of ``errors`` is printed as ``<program>: error: <message>`` on stderr and gives
    status 2, as argparse's own errors do; any other exception is a bug and propagates
    with its traceback.
    """
    try:
        main(argv)
    except errors as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f'{osp.basename(sys.argv[0])}: error: {message}', file=sys.stderr)
        return 2
    return 0


# ------------------------------------------------------------ command-line values --

def parse_roi(text):
    """argparse type: ``'x,y,w,h'`` -> a tuple of four ints (QuPath's level-0 pixels)."""
    try:
        x, y, w, h = (int(v) for v in text.split(','))
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected x,y,w,h (four integers), got {text!r}')
    if w <= 0 or h <= 0 or x < 0 or y < 0:
        raise argparse.ArgumentTypeError(f'expected x, y >= 0 and w, h > 0, got {text!r}')
    return x, y, w, h


def int_at_least(minimum):
    """argparse type: an integer >= ``minimum``."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'expected an integer, got {text!r}')
        if value < minimum:
            raise argparse.ArgumentTypeError(f'expected an integer >= {minimum}, got {value}')
        return value
    return parse


def positive_float(text):
    """argparse type: a number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected a number, got {text!r}')
    if not value > 0:
        raise argparse.ArgumentTypeError(f'expected a number > 0, got {text!r}')
    return value


def score_thr_or_val(text):
    """argparse type of ``tools/test.py --score-thr``: a score in [0, 1], or ``'val'``
    (:func:`set_test_score_thr`)."""
    if text == 'val':
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a score in [0, 1] or 'val', got {text!r}")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f'expected a score in [0, 1], got {text!r}')
    return value


# --------------------------------------------------------------- score threshold --

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
