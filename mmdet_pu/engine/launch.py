"""How the command lines start MMEngine: configs loaded as mmdet's tools load them, the
runner a config asks for, and the one process-group setup (CPU gloo training,
:func:`init_distributed` for the slide cohorts)."""
import argparse
import os.path as osp
from datetime import timedelta
from typing import Optional, Tuple

import torch
import torch.distributed as dist
from mmengine.config import Config, DictAction
from mmengine.dist import get_dist_info, init_dist
from mmengine.registry import RUNNERS
from mmengine.runner import Runner

from mmdet_pu.datasets.data_classes import apply_data_classes
from mmdet_pu.datasets.deletion import apply_deletion
from mmdet_pu.evaluation.overlay_hook import add_overlay_hook
from mmdet_pu.evaluation.validation_thr import set_test_score_thr

#: Timeout of the process group of :func:`init_distributed`: its final barrier waits for
#: the slowest process.
DIST_TIMEOUT = timedelta(days=7)


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

    ``--cfg-options`` are merged, the classes of the prepared data set where the config
    asks for them (:func:`~mmdet_pu.datasets.data_classes.apply_data_classes`), then the
    config's ``deletion`` is handed to its loaders
    (:func:`~mmdet_pu.datasets.deletion.apply_deletion`, as ``CellRunner`` does), so
    tools that build datasets from the config see the runner's. The work dir is
    ``work_dir``, the config's own ``work_dir``, or ``./work_dirs/<config name>``.
    Without a GPU, a distributed launch runs on CPUs (see :func:`use_cpu_distributed`).
    """
    cfg = Config.fromfile(config)
    cfg.launcher = launcher
    if cfg_options is not None:
        cfg.merge_from_dict(cfg_options)
    cfg = apply_deletion(apply_data_classes(cfg))
    if work_dir is not None:
        cfg.work_dir = work_dir
    elif cfg.get('work_dir', None) is None:
        cfg.work_dir = osp.join('./work_dirs', osp.splitext(osp.basename(config))[0])
    if launcher != 'none' and not torch.cuda.is_available():
        use_cpu_distributed(cfg)
    return cfg


def load_test_config(config, checkpoint, cfg_options=None, work_dir=None,
                     launcher='none', score_thr=None, show_dir=None, overlay_style='box'):
    """The config the test command line (:mod:`mmdet_pu.commands.test`) tests
    ``checkpoint`` with: :func:`load_config`, ``load_from`` the checkpoint, the test
    score threshold (:func:`~mmdet_pu.evaluation.validation_thr.set_test_score_thr`: a
    number, ``'val'``, or the config's own) and, with ``show_dir``, the TP/FP/FN overlays
    (:func:`~mmdet_pu.evaluation.add_overlay_hook`)."""
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
