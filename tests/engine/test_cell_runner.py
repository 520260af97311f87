"""CellRunner: a config's top-level ``deletion`` reaches the train and val loaders only,
and the config's text is formatted once."""
import copy
import pickle

import mmengine.config.config as mmengine_config
import pytest
from mmengine.config import Config
from mmengine.registry import RUNNERS

import mmdet_pu  # noqa: F401
from mmdet_pu.datasets import apply_deletion
from mmdet_pu.engine.runner import CellRunner, OnceFormattedConfig

SCHEME = dict(type='KeepPerPatch', k=1, order='random', seed=0)


def loaders(**dataset):
    cell = dict(type='CellCocoDataset', ann_file='a.json', **dataset)
    return dict(train_dataloader=dict(dataset=cell),
                val_dataloader=dict(dataset=dict(cell)),
                test_dataloader=dict(dataset=dict(cell)))


def test_the_scheme_reaches_train_and_val_and_never_test():
    cfg = apply_deletion(Config(dict(deletion=SCHEME, **loaders())))
    assert cfg.train_dataloader.dataset.deletion == SCHEME
    assert cfg.val_dataloader.dataset.deletion == SCHEME
    assert 'deletion' not in cfg.test_dataloader.dataset
    complete = apply_deletion(Config(dict(deletion=None, **loaders())))
    assert complete.train_dataloader.dataset.deletion is None


def test_wrapped_datasets_receive_it_and_a_config_without_the_key_is_unchanged():
    cfg = Config(dict(deletion=SCHEME, train_dataloader=dict(dataset=dict(
        type='RepeatDataset', times=2,
        dataset=dict(type='mmdet.CellCocoDataset', ann_file='a.json')))))
    assert apply_deletion(cfg).train_dataloader.dataset.dataset.deletion == SCHEME
    plain = Config(loaders(deletion=SCHEME))
    assert apply_deletion(plain) is plain


def test_a_loader_with_another_scheme_of_its_own_is_an_error():
    cfg = Config(dict(deletion=SCHEME, **loaders()))
    cfg.val_dataloader.dataset.deletion = dict(SCHEME, k=5)
    with pytest.raises(ValueError, match=r'val_dataloader\.dataset\.deletion is set to .*'
                       r'set it once, there'):
        apply_deletion(cfg)
    # complete labels asked of one loader are no absence of a scheme: the top-level
    # scheme would otherwise replace them without a word
    cfg = Config(dict(deletion=SCHEME, **loaders()))
    cfg.merge_from_dict({'train_dataloader.dataset.deletion': None})
    with pytest.raises(ValueError, match=r'train_dataloader\.dataset\.deletion is set to '
                       r'None, .*--cfg-options deletion\.k=\.\.\. or deletion=None'):
        apply_deletion(cfg)
    cfg = Config(dict(deletion=SCHEME, train_dataloader=dict(
        dataset=dict(type='CocoDataset', ann_file='a.json'))))
    with pytest.raises(ValueError, match='no CellCocoDataset in train_dataloader'):
        apply_deletion(cfg)


def test_configs_build_the_cell_runner_with_the_scheme_applied(tmp_path):
    cfg = Config.fromfile('configs/synthetic/synthetic_keep5_pu.py')
    cfg.work_dir = str(tmp_path)
    runner = RUNNERS.build(cfg)
    assert type(runner) is CellRunner
    assert runner._train_dataloader['dataset']['deletion'] == dict(SCHEME, k=5)
    assert runner._val_dataloader['dataset']['deletion'] == dict(SCHEME, k=5)
    assert 'deletion' not in runner._test_dataloader['dataset']


def test_the_runner_formats_the_config_text_once_and_as_mmengine_does(tmp_path, monkeypatch):
    calls = []
    format_code = mmengine_config.FormatCode

    def counted(*args, **kwargs):
        calls.append(1)
        return format_code(*args, **kwargs)

    monkeypatch.setattr(mmengine_config, 'FormatCode', counted)
    cfg = Config.fromfile('configs/synthetic/synthetic_keep1_pu.py')
    once = OnceFormattedConfig.of(cfg)
    assert once.to_dict() == cfg.to_dict() and once.filename == cfg.filename
    assert once.pretty_text == cfg.pretty_text and len(calls) == 2
    assert once.pretty_text == once.dump() and len(calls) == 2  # formatted once
    once.model.roi_head.bbox_head.loss_cls.prior = 0.5  # new contents: formatted again
    assert 'prior=0.5' in once.pretty_text and len(calls) == 3
    assert 'prior=0.5' not in cfg.pretty_text  # a copy: the original is untouched
    for other in (copy.deepcopy(once), pickle.loads(pickle.dumps(once))):
        assert type(other) is OnceFormattedConfig and other.to_dict() == once.to_dict()
    assert OnceFormattedConfig.of(once) is once

    calls.clear()
    cfg.work_dir = str(tmp_path)
    runner = RUNNERS.build(cfg)
    assert type(runner.cfg) is OnceFormattedConfig
    runner.dump_config()
    runner.cfg.pretty_text
    assert len(calls) == 1  # the log and the dump: one formatting
    dumped = Config.fromfile(tmp_path / 'synthetic_keep1_pu.py')
    assert dumped.to_dict() == runner.cfg.to_dict()


def test_every_runner_of_a_process_writes_with_a_visualizer_of_its_own(tmp_path):
    runners = []
    for name in ('first', 'second'):
        cfg = Config.fromfile('configs/synthetic/synthetic_keep1_pu.py')
        assert cfg.visualizer.name == 'visualizer'  # mmdet's shared name
        cfg.work_dir = str(tmp_path / name)
        runners.append(RUNNERS.build(cfg))
    first, second = (runner.visualizer for runner in runners)
    assert first is not second
    for runner in runners:
        backend = runner.visualizer._vis_backends['LocalVisBackend']
        assert backend._save_dir.startswith(runner.log_dir)
    assert type(second).get_current_instance() is second
