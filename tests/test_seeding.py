"""Seeded runs: every shipped config seeds itself; same seed and threads, same run.

A run on a CPU is repeatable when the runner's seed fixes Python, numpy and torch, the
infinite sampler's shuffling and the dataloader workers' seeds (mmengine's
``randomness``), and the deletion of annotations is seeded per image (it is, by file
name). The shipped synthetic PU config trains a few iterations twice with seed 0 and once
with seed 1 on a small generated dataset, with its own loaders (two workers).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from mmengine.config import Config

from tests._data import REPO

CONFIG = 'configs/synthetic/synthetic_keep1_pu.py'
ITERS = 3
CONFIGS = sorted(p for p in (REPO / 'configs').rglob('*.py') if '_base_' not in p.parts)


@pytest.mark.parametrize('config', CONFIGS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_config_is_seeded(config):
    assert Config.fromfile(str(config)).randomness.seed == 0


def _start(*args):
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS='1')
    return subprocess.Popen([sys.executable, *map(str, args)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait(proc):
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stdout[-3000:] + stderr[-5000:]


def _run(*args):
    _wait(_start(*args))


@pytest.fixture(scope='module')
def data_root(tmp_path_factory):
    root = tmp_path_factory.mktemp('seeding') / 'synthetic'
    _run('data_prep/prepare.py', 'synthetic', '--variant', 'binary', '--out', root,
         '--num-images', '6', '--seed', '0', '--no-progress')
    return root


def _start_training(data_root, work_dir, seed):
    """Start training the shipped config (one thread; the runs go side by side)."""
    loaders = ('train_dataloader', 'val_dataloader', 'test_dataloader')
    return _start(
        'tools/train.py', CONFIG, '--work-dir', work_dir, '--cfg-options',
        *[f'{loader}.dataset.data_root={data_root}/' for loader in loaders],
        f'train_cfg.max_iters={ITERS}', f'train_cfg.val_interval={ITERS}',
        f'default_hooks.checkpoint.interval={ITERS}', 'default_hooks.logger.interval=1',
        'val_cfg=None', 'val_dataloader=None', 'val_evaluator=None',
        f'randomness.seed={seed}')


def _trained(work_dir):
    """(losses per iteration, final state dict) of a finished training."""
    log, = Path(work_dir).glob('*/vis_data/scalars.json')
    losses = [{k: v for k, v in json.loads(line).items() if k.startswith('loss')}
              for line in log.read_text().splitlines()]
    state = torch.load(Path(work_dir, f'iter_{ITERS}.pth'), map_location='cpu',
                       weights_only=False)['state_dict']
    return losses, state


@pytest.mark.slow
def test_same_seed_same_run_other_seed_other_run(data_root, tmp_path):
    runs = {name: (tmp_path / name, seed) for name, seed in (('a', 0), ('b', 0), ('c', 1))}
    procs = [_start_training(data_root, work_dir, seed) for work_dir, seed in runs.values()]
    for proc in procs:
        _wait(proc)
    (losses_a, state_a), (losses_b, state_b), (losses_c, state_c) = [
        _trained(work_dir) for work_dir, _ in runs.values()]

    assert len(losses_a) == ITERS and all('loss' in step for step in losses_a)
    assert losses_a == losses_b  # every loss of every iteration, exactly
    assert state_a.keys() == state_b.keys()
    for key in state_a:
        assert torch.equal(state_a[key], state_b[key]), key
    # the seed really reaches the run: initial weights, sampling and batches differ
    assert losses_c != losses_a
    assert not all(torch.equal(state_a[key], state_c[key]) for key in state_a)
