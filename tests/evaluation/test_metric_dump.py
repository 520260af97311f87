"""mmdet_pu.evaluation.metric_dump: the one reader of CellDetMetric's per-image dumps."""
import json

import pytest

from mmdet_pu.evaluation.metric_dump import (PER_IMAGE_FIELDS, read_metric_dump,
                                             read_validation_thr)


def test_a_truncated_dump_is_named(tmp_path):
    path = tmp_path / 'test_per_image.json'
    path.write_text('{"classes": ["cell"], "metr')
    with pytest.raises(ValueError, match='test_per_image.json: not valid JSON'):
        read_metric_dump(str(path))


def test_the_fields_a_reader_needs_are_checked(tmp_path):
    path = tmp_path / 'val_per_image.json'
    path.write_text(json.dumps(dict(metrics={'cell/pu_score_thr': 0.4})))
    assert read_metric_dump(str(path))['metrics'] == {'cell/pu_score_thr': 0.4}
    with pytest.raises(ValueError, match="val_per_image.json: field 'classes' missing"):
        read_metric_dump(str(path), PER_IMAGE_FIELDS)
    path.write_text('[]')
    with pytest.raises(ValueError, match="field 'metrics' missing"):
        read_metric_dump(str(path))
    with pytest.raises(OSError):
        read_metric_dump(str(tmp_path / 'missing.json'))


def test_the_validation_threshold_reads_back(tmp_path):
    path = tmp_path / 'val_per_image.json'
    path.write_text(json.dumps(dict(metrics={'cell/pu_score_thr': 0.4})))
    assert read_validation_thr(str(path)) == 0.4
    path.write_text(json.dumps(dict(metrics={'cell/pu_score_thr': None})))
    assert read_validation_thr(str(path)) is None
    path.write_text(json.dumps(dict(metrics={'cell/avg_f1': 0.5})))
    assert read_validation_thr(str(path)) is None
