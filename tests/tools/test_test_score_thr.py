"""tools/test.py --score-thr: a number, or the threshold selected on validation."""
import argparse
import json

import pytest

from tests._data import REPO
from tests.tools import load_tool

test_tool = load_tool('test')
CONFIG = str(REPO / 'configs' / 'synthetic' / 'synthetic_keep1_pu.py')
PAPER_CONFIG = str(REPO / 'configs' / 'pu' / 'mitos14_vgg16_keep1_pu.py')


def _args(checkpoint, score_thr, config=CONFIG, cfg_options=None):
    return argparse.Namespace(
        config=config, checkpoint=str(checkpoint), cfg_options=cfg_options,
        work_dir=None, launcher='none', show=False, show_dir=None, score_thr=score_thr)


def _write_val_dump(work_dir, value):
    dump = work_dir / 'cell_metrics' / 'val_per_image.json'
    dump.parent.mkdir(parents=True)
    dump.write_text(json.dumps(dict(metrics={'cell/avg_recall': 1.0,
                                             'cell/pu_score_thr': value})))


def test_validation_threshold_reaches_the_test_metric(tmp_path):
    _write_val_dump(tmp_path, 0.7)
    cfg = test_tool.build_cfg(_args(tmp_path / 'iter_300.pth', 'val'))
    assert cfg.test_evaluator.score_thr == 0.7
    assert cfg.val_evaluator.score_thr == 0.5  # only the test metric changes
    cfg = test_tool.build_cfg(_args(tmp_path / 'iter_300.pth', '0.35'))
    assert cfg.test_evaluator.score_thr == 0.35
    for config in (CONFIG, PAPER_CONFIG):
        cfg = test_tool.build_cfg(_args(tmp_path / 'x.pth', None, config))
        assert cfg.test_evaluator.score_thr == 0.5  # docs/method.md#evaluation


def test_config_asks_for_the_validation_threshold(tmp_path):
    # test_evaluator.score_thr='val' in a config (here through --cfg-options, as
    # tools/demo.py and tools/repeat.py pass it to every run)
    ask = {'test_evaluator.score_thr': 'val'}
    _write_val_dump(tmp_path, 0.8)
    cfg = test_tool.build_cfg(_args(tmp_path / 'iter_300.pth', None, cfg_options=ask))
    assert cfg.test_evaluator.score_thr == 0.8
    # the command line wins over the config
    cfg = test_tool.build_cfg(_args(tmp_path / 'iter_300.pth', '0.5', cfg_options=ask))
    assert cfg.test_evaluator.score_thr == 0.5
    with pytest.raises(FileNotFoundError, match='--score-thr 0.5'):
        test_tool.build_cfg(_args(tmp_path / 'elsewhere' / 'iter_300.pth', None,
                                  cfg_options=ask))
    # a validation pass that found no labeled cell: the config's request falls back to
    # 0.5, an explicit --score-thr val fails
    empty = tmp_path / 'untrained'
    _write_val_dump(empty, None)
    cfg = test_tool.build_cfg(_args(empty / 'iter_2.pth', None, cfg_options=ask))
    assert cfg.test_evaluator.score_thr == 0.5
    with pytest.raises(ValueError, match='no selected threshold'):
        test_tool.build_cfg(_args(empty / 'iter_2.pth', 'val'))


def test_missing_or_empty_selection_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match='val_per_image.json not found'):
        test_tool.build_cfg(_args(tmp_path / 'iter_300.pth', 'val'))
    _write_val_dump(tmp_path, None)
    with pytest.raises(ValueError, match='no selected threshold'):
        test_tool.build_cfg(_args(tmp_path / 'iter_300.pth', 'val'))
