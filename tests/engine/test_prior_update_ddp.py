"""PriorUpdateHook under real distributed training: 2 CPU processes, gloo, torchrun."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from mmengine.dist import get_rank
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper

from mmdet.registry import HOOKS
from tests._data import REPO
from tests.engine.test_prior_update_hook import tiny_mpu_config


@HOOKS.register_module(force=True)
class PriorDumpHook(Hook):
    """Test-only: appends each rank's priors and batch images to priors_rank<r>.jsonl.

    Records after PriorUpdateHook's ``before_train_iter`` (the update when the hook runs
    its own forward) and after the iteration (the update made inside the forward when
    it reuses the features), each before DDP could broadcast rank 0's buffers again.
    """

    priority = 'LOW'

    def before_train_iter(self, runner, batch_idx, data_batch=None):
        self._dump(runner, 'before_step', data_batch)

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        self._dump(runner, 'after_step', data_batch)

    @staticmethod
    def _dump(runner, stage, data_batch):
        model = runner.model.module if is_model_wrapper(runner.model) else runner.model
        record = dict(
            iter=runner.iter, stage=stage,
            priors=model.roi_head.bbox_head.loss_cls.priors.tolist(),
            rpn_prior=model.rpn_head.loss_cls.prior.item(),
            images=[s.img_path for s in data_batch['data_samples']])
        path = Path(runner.work_dir) / f'priors_rank{get_rank()}.jsonl'
        with path.open('a') as f:
            f.write(json.dumps(record) + '\n')


@pytest.mark.slow
@pytest.mark.parametrize('norm_eval', [False, True],
                         ids=['separate-forward', 'reused-features'])
def test_two_process_training_holds_identical_priors_on_every_rank(tmp_path, norm_eval):
    """BN training: the hook's own forward; BN frozen: detection inside the DDP forward."""
    iters = 4
    hook = dict(type='PriorUpdateHook', anchor_prior=0.3, score_thr=0.05)
    config = tiny_mpu_config(
        tmp_path, hook, max_iters=iters, n_images=8,
        extra=(f"custom_hooks = [{hook!r}, dict(type='PriorDumpHook')]\n"
               "custom_imports = dict(imports=['mmdet_pu', "
               "'tests.engine.test_prior_update_ddp'], allow_failed_imports=False)\n"))
    work_dir = tmp_path / 'work'
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS='1',
               CUDA_VISIBLE_DEVICES='')
    proc = subprocess.run(
        [sys.executable, '-m', 'torch.distributed.run', '--nproc_per_node', '2',
         '--master_port', str(29500 + os.getpid() % 1000),
         'tools/train.py', config, '--launcher', 'pytorch', '--work-dir', str(work_dir),
         '--cfg-options', 'env_cfg.dist_cfg.backend=gloo',
         f'model.backbone.norm_eval={norm_eval}',
         'val_cfg=None', 'val_dataloader=None', 'val_evaluator=None'],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]

    ranks = [[json.loads(line) for line in
              (work_dir / f'priors_rank{r}.jsonl').read_text().splitlines()]
             for r in range(2)]
    stages = [(i, stage) for i in range(iters) for stage in ('before_step', 'after_step')]
    for records in ranks:
        assert [(r['iter'], r['stage']) for r in records] == stages
    # the ranks trained on different images ...
    assert any(a['images'] != b['images'] for a, b in zip(*ranks))
    # ... yet hold identical priors, updated from the summed counts
    for a, b in zip(*ranks):
        assert a['priors'] == b['priors'] and a['rpn_prior'] == b['rpn_prior'], (a, b)
        assert all(p > 0 for p in a['priors']) and sum(a['priors']) < 1
    assert len({tuple(r['priors']) for r in ranks[0]}) > 2

    # rank 0's checkpoint holds the priors both ranks used in the last step
    state = torch.load(work_dir / f'iter_{iters}.pth', map_location='cpu',
                       weights_only=False)['state_dict']
    assert state['roi_head.bbox_head.loss_cls.priors'].tolist() == ranks[1][-1]['priors']
    assert state['rpn_head.loss_cls.prior'].item() == ranks[1][-1]['rpn_prior']
