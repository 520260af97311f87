"""mmdet_pu.evaluation.validation_thr: where a detector's validation threshold is read
(beside its checkpoint, or the dump its config records, as a fit's fused detector's
does) and the threshold slide inference keeps detections at."""
import json

import pytest
from mmengine.config import Config

from mmdet_pu.evaluation.validation_thr import (ValidationDumpMissing, ValidationThrError,
                                                detector_score_thr, set_test_score_thr,
                                                validation_dump, validation_score_thr)


def _write_val_dump(folder, value):
    dump = folder / 'cell_metrics' / 'val_per_image.json'
    dump.parent.mkdir(parents=True)
    dump.write_text(json.dumps(dict(metrics={'cell/pu_score_thr': value})))
    return dump


def _config(path, score_thr=0.5, dump='./cell_metrics/val_per_image.json'):
    """A config file at ``path`` with a test metric at ``score_thr`` and, unless
    ``dump`` is None, the validation dump it records (as fused_config.py does)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"test_evaluator = dict(type='CellDetMetric', score_thr={score_thr!r})"]
    if dump is not None:
        lines.append(f'validation_dump = {dump!r}')
    path.write_text('\n'.join(lines) + '\n')
    return Config.fromfile(str(path))


def test_a_recorded_dump_is_read_beside_its_config_wherever_the_checkpoint_lies(tmp_path):
    """A fit: fit_prior.pth in the fit's folder, the fused detector's dump in fused/."""
    fused = tmp_path / 'fit' / 'fused'
    cfg = _config(fused / 'fused_config.py')
    checkpoint = str(tmp_path / 'fit' / 'fit_prior.pth')
    with pytest.raises(ValidationDumpMissing, match=str(fused / 'cell_metrics')):
        validation_score_thr(checkpoint, cfg)
    _write_val_dump(fused, 0.8)
    assert validation_dump(checkpoint, cfg) == str(fused / 'cell_metrics' /
                                                   'val_per_image.json')
    assert validation_score_thr(checkpoint, cfg) == 0.8
    set_test_score_thr(cfg, checkpoint, 'val')
    assert cfg.test_evaluator.score_thr == 0.8
    # a config without the record: the dump beside the checkpoint
    plain = _config(tmp_path / 'plain.py', dump=None)
    with pytest.raises(FileNotFoundError, match=str(tmp_path / 'fit' / 'cell_metrics')):
        validation_score_thr(checkpoint, plain)
    _write_val_dump(tmp_path / 'fit', 0.3)
    assert validation_score_thr(checkpoint, plain) == 0.3


def test_slides_keep_the_configs_test_threshold_unless_told(tmp_path):
    checkpoint = str(tmp_path / 'run' / 'iter_2.pth')
    _write_val_dump(tmp_path / 'run', 0.7)
    for score_thr, asked, expected in ((0.5, None, 0.5), (0.3, None, 0.3),
                                       ('val', None, 0.7), (0.5, 'val', 0.7),
                                       ('val', 0.4, 0.4)):
        cfg = _config(tmp_path / 'cfg.py', score_thr, dump=None)
        assert detector_score_thr(cfg, checkpoint, asked) == expected
    assert detector_score_thr(Config(dict()), checkpoint) == 0.5  # no test metric
    # a validation that selected nothing: the config's 'val' falls back, --score-thr val
    # is an error that says what to give instead
    empty = tmp_path / 'untrained'
    _write_val_dump(empty, None)
    cfg = _config(tmp_path / 'cfg.py', 'val', dump=None)
    assert detector_score_thr(cfg, str(empty / 'iter_2.pth')) == 0.5
    with pytest.raises(ValidationThrError, match='no selected threshold.*--score-thr 0.5'):
        detector_score_thr(cfg, str(empty / 'iter_2.pth'), 'val')
