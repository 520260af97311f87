"""ResumableCheckpointHook: checkpoints at least every third of a training, so that an
interrupted one resumes from its latest checkpoint."""
from types import SimpleNamespace

import pytest
from mmengine.config import Config
from mmengine.hooks import Hook

from mmdet.registry import HOOKS
from mmdet_pu.engine.hooks import ResumableCheckpointHook
from mmdet_pu.engine.runner import CellRunner
from tests._data import make_tiny_coco, write_tiny_config


@pytest.mark.parametrize('max_iters, interval, spacing', [
    (300, 500, 100), (2580, 500, 500), (7, 500, 2), (2, 2, 1), (300, 50, 50)])
def test_spacing_is_the_interval_or_a_third_of_the_training(tmp_path, max_iters, interval,
                                                            spacing):
    hook = ResumableCheckpointHook(interval=interval, by_epoch=False)
    logger = SimpleNamespace(info=lambda msg: None)
    hook.before_train(SimpleNamespace(max_iters=max_iters, work_dir=str(tmp_path),
                                      logger=logger, message_hub=None))
    assert hook.interval == spacing


@pytest.mark.parametrize('kwargs, message', [
    (dict(by_epoch=True), 'by_epoch=False'), (dict(by_epoch=False, per_training=0), '>= 1')])
def test_invalid_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ResumableCheckpointHook(**kwargs)


@HOOKS.register_module(force=True)
class InterruptAt(Hook):
    """Raises after training iteration ``at`` (1-based); records every iteration run."""
    seen = []

    def __init__(self, at=None):
        self.at = at

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        InterruptAt.seen.append(runner.iter + 1)
        if runner.iter + 1 == self.at:
            raise KeyboardInterrupt


def runner(tmp_path, name, **cfg):
    config = Config.fromfile(str(tmp_path / 'tiny.py'))
    config.merge_from_dict(dict(cfg, work_dir=str(tmp_path / 'work')))
    config.experiment_name = config.visualizer.name = name  # one process, two runners
    return CellRunner.from_cfg(config)


def test_the_runtime_saves_every_third_and_an_interrupted_training_resumes(tmp_path):
    make_tiny_coco(tmp_path / 'data', n_images=2)
    # the shipped runtime's hook, with an interval longer than the training
    write_tiny_config(tmp_path / 'tiny.py', tmp_path / 'data', max_iters=6,
                      extra="default_hooks['checkpoint'].update(interval=500)\n")
    assert Config.fromfile(str(tmp_path / 'tiny.py')).default_hooks.checkpoint.type == \
        'ResumableCheckpointHook'
    InterruptAt.seen = []
    with pytest.raises(KeyboardInterrupt):
        runner(tmp_path, 'first', custom_hooks=[dict(type='InterruptAt', at=5)]).train()
    assert InterruptAt.seen == [1, 2, 3, 4, 5]
    saved = sorted(p.name for p in (tmp_path / 'work').glob('iter_*.pth'))
    assert saved == ['iter_4.pth']  # every 2 of 6 iterations, the latest kept

    InterruptAt.seen = []
    resumed = runner(tmp_path, 'second', resume=True, custom_hooks=[dict(type='InterruptAt')])
    resumed.train()
    assert InterruptAt.seen == [5, 6] and resumed.iter == 6
    assert sorted(p.name for p in (tmp_path / 'work').glob('iter_*.pth')) == ['iter_6.pth']
