"""Config loading, runner building and launch settings shared by the tools."""
import argparse
import os.path as osp

import torch
import torch.distributed as dist
from mmengine.config import Config, DictAction

from mmdet_pu.datasets.deletion import apply_deletion


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


def build_runner(cfg):
    """The runner a config asks for, as mmdet's tools build it: ``runner_type``
    (``CellRunner`` in every shipped config, which applies the config's ``deletion``)
    or mmengine's ``Runner``."""
    from mmengine.registry import RUNNERS
    from mmengine.runner import Runner
    return RUNNERS.build(cfg) if 'runner_type' in cfg else Runner.from_cfg(cfg)


def use_cpu_distributed(cfg):
    """Run a distributed job on CPUs: gloo process group, DDP without device ids.

    mmengine 0.10's own initialisation calls ``torch.cuda.set_device`` and wraps the
    model with ``device_ids=[LOCAL_RANK]``, both of which need a GPU. The process group
    is created here from the launcher's environment (``torchrun`` sets it; mmengine then
    skips its initialisation) and DDP is told the model lives on the CPU.
    """
    if cfg.launcher != 'pytorch':
        raise RuntimeError(f'--launcher {cfg.launcher} without a GPU is not supported; '
                           'use torchrun with --launcher pytorch for CPU runs')
    cfg.setdefault('env_cfg', {}).setdefault('dist_cfg', {})['backend'] = 'gloo'
    if not dist.is_initialized():
        dist.init_process_group(backend='gloo')
    wrapper = dict(type='MMDistributedDataParallel', broadcast_buffers=False,
                   find_unused_parameters=cfg.get('find_unused_parameters', False))
    wrapper.update(cfg.get('model_wrapper_cfg', None) or {})
    wrapper['device_ids'] = None
    cfg.model_wrapper_cfg = wrapper
