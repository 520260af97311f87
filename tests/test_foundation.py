"""The installed stack: registration, compatibility shims and the train/resume/test CLI."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from mmengine.config import Config

from tests._data import REPO, make_tiny_coco, write_tiny_config


def run(*args, cwd=REPO):
    """Run a tool of this repo as a user would, failing with its output."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, f'{args} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}'
    return proc.stdout + proc.stderr


def test_import_does_not_import_torchvision():
    run('-c', "import mmdet_pu, sys; assert 'torchvision' not in sys.modules")


def test_import_registers_every_module_in_mmdet_registries():
    """What configs name with ``default_scope='mmdet'`` resolves after ``import mmdet_pu``."""
    run('-c', """
import mmdet_pu
from mmdet.registry import DATASETS, HOOKS, LOOPS, METRICS, MODELS
from mmdet_pu.registry import DELETION_SCHEMES
expected = {
    MODELS: ['PULoss', 'MultiPULoss', 'PURPNHead', 'BDERPNHead', 'BDEShared2FCBBoxHead',
             'VGG16', 'RoIFocalLoss', 'FocalPULoss', 'QualityFocalPULoss',
             'BackgroundRecalibrationLoss', 'PURetinaHead', 'PUATSSHead', 'PUFCOSHead',
             'PUGFLHead', 'PURTMDetHead', 'PURTMDetSepBNHead'],
    HOOKS: ['PriorUpdateHook', 'CellOverlayHook'],
    LOOPS: ['TiledTestLoop', 'TiledValLoop'],
    DATASETS: ['CellCocoDataset'],
    METRICS: ['CellDetMetric'],
    DELETION_SCHEMES: ['KeepPerPatch', 'CapPerClass', 'KeepRegion'],
}
for registry, names in expected.items():
    for name in names:
        assert registry.get(name) is not None, (registry.name, name)
""")


def test_check_env_runs_mmcv_ops():
    assert 'nms, RoIAlign run' in run('tools/check_env.py')


def test_mmdet_scope_base_configs_resolve(tmp_path):
    cfg_file = tmp_path / 'child.py'
    cfg_file.write_text("_base_ = 'mmdet::_base_/models/faster-rcnn_r50_fpn.py'\n"
                        "model = dict(roi_head=dict(bbox_head=dict(num_classes=1)))\n")
    cfg = Config.fromfile(str(cfg_file))
    assert cfg.model.type == 'FasterRCNN'
    assert cfg.model.roi_head.bbox_head.num_classes == 1


def test_checkpoint_of_mmengine_loads_with_weights_only(tmp_path):
    """mmengine's message hub state (HistoryBuffer, numpy) loads through the shim."""
    import numpy as np
    from mmengine.logging import HistoryBuffer
    from mmengine.runner.checkpoint import _load_checkpoint

    import mmdet_pu  # noqa: F401
    buffer = HistoryBuffer()
    buffer.update(1.5)
    ckpt = dict(state_dict={'w': torch.ones(2)},
                message_hub=dict(log_scalars={'train/loss': buffer},
                                 runtime_info={'seed': np.int64(3), 'arr': np.zeros(2)}))
    path = tmp_path / 'ckpt.pth'
    torch.save(ckpt, path)
    loaded = _load_checkpoint(str(path), map_location='cpu')
    assert loaded['message_hub']['log_scalars']['train/loss'].current() == 1.5
    assert loaded['message_hub']['runtime_info']['seed'] == 3


def test_checkpoint_with_unknown_objects_is_still_refused(tmp_path):
    from mmengine.runner.checkpoint import _load_checkpoint

    import mmdet_pu  # noqa: F401
    path = tmp_path / 'evil.pth'
    torch.save({'obj': subprocess.Popen}, path)
    with pytest.raises(Exception, match='Unsupported global'):
        _load_checkpoint(str(path), map_location='cpu')


def _scalars(work_dir):
    logs = sorted(Path(work_dir).glob('*/vis_data/scalars.json'))
    return [json.loads(line) for log in logs for line in log.read_text().splitlines()]


@pytest.mark.slow
def test_train_resume_test_from_command_line(tmp_path):
    data = tmp_path / 'data'
    make_tiny_coco(data, n_images=4, size=128)
    config = write_tiny_config(tmp_path / 'tiny.py', data, max_iters=2)
    work_dir = tmp_path / 'work'

    val_map = re.compile(r'Iter\(val\).*coco/bbox_mAP: ([\d.]+)')
    first = run('tools/train.py', config, '--work-dir', work_dir)
    assert (work_dir / 'iter_2.pth').is_file() and val_map.findall(first)
    # stopped during its final validation: resumed at its last iteration, it trains no
    # further and validates that checkpoint (as the interrupted run would have)
    again = run('tools/train.py', config, '--work-dir', work_dir, '--resume')
    assert val_map.findall(again) == val_map.findall(first)
    assert 'Iter(train)' not in again

    trained = run('tools/train.py', config, '--work-dir', work_dir, '--resume', '--test',
                  '--cfg-options', 'train_cfg.max_iters=4',
                  'default_hooks.checkpoint.interval=4')
    assert 'resumed' in trained.lower() or 'Load checkpoint' in trained
    assert (work_dir / 'iter_4.pth').is_file()
    iters = [s['iter'] for s in _scalars(work_dir) if 'loss' in s]
    assert iters == [1, 2, 3, 4], iters  # resumed at iteration 3, not from scratch
    resumed = torch.load(work_dir / 'iter_4.pth', map_location='cpu', weights_only=False)
    assert resumed['meta']['iter'] == 4

    out = run('tools/test.py', config, work_dir / 'iter_4.pth', '--work-dir', tmp_path / 'test',
              '--out', tmp_path / 'preds.pkl')
    assert (tmp_path / 'preds.pkl').is_file()
    # --test tested the last checkpoint as tools/test.py does
    test_map = re.compile(r'Iter\(test\).*coco/bbox_mAP: ([\d.]+)')
    assert test_map.findall(out) == test_map.findall(trained) and test_map.findall(out)


def test_load_from_checkpoint(tmp_path):
    data = tmp_path / 'data'
    make_tiny_coco(data, n_images=2, size=128)
    config = write_tiny_config(tmp_path / 'tiny.py', data, max_iters=1)
    run('tools/train.py', config, '--work-dir', tmp_path / 'a')
    out = run('tools/train.py', config, '--work-dir', tmp_path / 'b', '--cfg-options',
              f"load_from={tmp_path / 'a' / 'iter_1.pth'}")
    assert 'Load checkpoint from' in out
