"""mmdet_pu.engine.launch: --cfg-options as the tools parse them, and the test config of
tools/test.py (and tools/train.py --test): the score threshold (a number, or the one
selected on validation) and the overlays."""
import json

import pytest

from mmdet_pu.engine.launch import load_test_config, parse_cfg_options
from tests._cli import run_script
from tests._data import REPO

CONFIG = str(REPO / 'configs' / 'synthetic' / 'synthetic_keep1_pu.py')
PAPER_CONFIG = str(REPO / 'configs' / 'pu' / 'mitos14_vgg16_keep1_pu.py')


def test_cfg_options_parse_as_the_tools_do():
    assert parse_cfg_options([]) == {}
    options = parse_cfg_options(['model.roi_head.bbox_head.loss_cls.priors=[0.2, 0.1]',
                                 'custom_hooks=[]', 'train_cfg.max_iters=2'])
    assert options == {'model.roi_head.bbox_head.loss_cls.priors': [0.2, 0.1],
                       'custom_hooks': [], 'train_cfg.max_iters': 2}


def build_cfg(checkpoint, score_thr, config=CONFIG, cfg_options=None):
    """The test config of tools/test.py CONFIG CHECKPOINT [--score-thr SCORE_THR]."""
    cfg = load_test_config(config, str(checkpoint), cfg_options, score_thr=score_thr)
    assert cfg.load_from == str(checkpoint)
    return cfg


def test_the_test_config_draws_overlays_with_show_dir(tmp_path):
    cfg = load_test_config(CONFIG, str(tmp_path / 'x.pth'), show_dir='overlays')
    hooks = [hook for hook in cfg.custom_hooks if hook['type'] == 'CellOverlayHook']
    assert [hook['out_dir'] for hook in hooks] == ['overlays']
    assert not any(hook['type'] == 'CellOverlayHook'
                   for hook in load_test_config(CONFIG, 'x.pth').custom_hooks)


def test_train_takes_show_dir_only_with_test():
    proc = run_script('tools/train.py', CONFIG, '--show-dir', 'overlays')
    assert proc.returncode == 2 and '--show-dir needs --test' in proc.stderr


def _write_val_dump(work_dir, value):
    dump = work_dir / 'cell_metrics' / 'val_per_image.json'
    dump.parent.mkdir(parents=True)
    dump.write_text(json.dumps(dict(metrics={'cell/avg_recall': 1.0,
                                             'cell/pu_score_thr': value})))


def test_validation_threshold_reaches_the_test_metric(tmp_path):
    _write_val_dump(tmp_path, 0.7)
    cfg = build_cfg(tmp_path / 'iter_300.pth', 'val')
    assert cfg.test_evaluator.score_thr == 0.7
    assert cfg.val_evaluator.score_thr == 0.5  # only the test metric changes
    cfg = build_cfg(tmp_path / 'iter_300.pth', '0.35')
    assert cfg.test_evaluator.score_thr == 0.35
    for config in (CONFIG, PAPER_CONFIG):
        cfg = build_cfg(tmp_path / 'x.pth', None, config)
        assert cfg.test_evaluator.score_thr == 0.5  # docs/method.md#evaluation


def test_config_asks_for_the_validation_threshold(tmp_path):
    # test_evaluator.score_thr='val' in a config (here through --cfg-options, as
    # tools/demo.py and tools/repeat.py pass it to every run)
    ask = {'test_evaluator.score_thr': 'val'}
    _write_val_dump(tmp_path, 0.8)
    cfg = build_cfg(tmp_path / 'iter_300.pth', None, cfg_options=ask)
    assert cfg.test_evaluator.score_thr == 0.8
    # the command line wins over the config
    cfg = build_cfg(tmp_path / 'iter_300.pth', '0.5', cfg_options=ask)
    assert cfg.test_evaluator.score_thr == 0.5
    with pytest.raises(FileNotFoundError, match='--score-thr 0.5'):
        build_cfg(tmp_path / 'elsewhere' / 'iter_300.pth', None, cfg_options=ask)
    # a validation pass that found no labeled cell: the config's request falls back to
    # 0.5, an explicit --score-thr val fails
    empty = tmp_path / 'untrained'
    _write_val_dump(empty, None)
    cfg = build_cfg(empty / 'iter_2.pth', None, cfg_options=ask)
    assert cfg.test_evaluator.score_thr == 0.5
    with pytest.raises(ValueError, match='no selected threshold'):
        build_cfg(empty / 'iter_2.pth', 'val')


def test_missing_or_empty_selection_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match='val_per_image.json not found'):
        build_cfg(tmp_path / 'iter_300.pth', 'val')
    _write_val_dump(tmp_path, None)
    with pytest.raises(ValueError, match='no selected threshold'):
        build_cfg(tmp_path / 'iter_300.pth', 'val')


def test_the_test_command_names_a_missing_dump_in_one_line(tmp_path):
    """tools/test.py --score-thr val without the dump: the file and what to do, status
    2, no traceback; a validation that selected nothing, the same."""
    checkpoint = tmp_path / 'iter_300.pth'
    for empty_dump in (False, True):
        if empty_dump:
            _write_val_dump(tmp_path, None)
        proc = run_script('tools/test.py', CONFIG, checkpoint, '--score-thr', 'val')
        assert proc.returncode == 2 and 'Traceback' not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith('test.py: error: ')
        assert str(tmp_path / 'cell_metrics' / 'val_per_image.json') in lines[0]
        assert '--score-thr 0.5' in lines[0]


def test_tta_adds_the_three_flips_to_the_tiled_test_loop(tmp_path, monkeypatch):
    from mmdet_pu.commands import test as test_command
    monkeypatch.setattr('sys.argv', ['test.py', CONFIG, str(tmp_path / 'x.pth'), '--tta'])
    cfg = test_command.build_cfg(test_command.parse_args())
    assert cfg.test_cfg.type == 'TiledTestLoop'
    assert cfg.test_cfg.flips == ['horizontal', 'vertical', 'diagonal']
    monkeypatch.setattr('sys.argv', ['test.py', CONFIG, str(tmp_path / 'x.pth')])
    assert 'flips' not in test_command.build_cfg(test_command.parse_args()).test_cfg


def test_tta_serves_a_users_subclass_of_the_tiled_test_loop(tmp_path, monkeypatch):
    from mmdet.registry import LOOPS
    from mmdet_pu.commands import test as test_command
    from mmdet_pu.engine.runner import TiledTestLoop

    class UsersTiledLoop(TiledTestLoop):
        pass

    name = 'UsersTiledLoopOfTestLaunch'
    LOOPS.register_module(name=name, module=UsersTiledLoop, force=True)
    try:
        monkeypatch.setattr('sys.argv', ['test.py', CONFIG, str(tmp_path / 'x.pth'), '--tta',
                                         '--cfg-options', f'test_cfg.type={name}'])
        cfg = test_command.build_cfg(test_command.parse_args())
    finally:
        LOOPS._module_dict.pop(name)
    assert cfg.test_cfg.type == name
    assert cfg.test_cfg.flips == ['horizontal', 'vertical', 'diagonal']
    assert test_command.is_tiled_test_loop(UsersTiledLoop)
    assert not test_command.is_tiled_test_loop('TestLoop')
    assert not test_command.is_tiled_test_loop(None)
