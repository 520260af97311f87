import json

import cv2
import numpy as np
import pytest

from cellio.atomic import (AtomicOutput, atomic_open, write_atomic, write_image_atomic,
                           write_json_atomic)


def test_atomic_files_round_trip(tmp_path):
    write_json_atomic(tmp_path / 'a' / 'b.json', dict(x=[1, 2]))
    assert json.loads((tmp_path / 'a' / 'b.json').read_text()) == dict(x=[1, 2])
    rgb = np.zeros((4, 6, 3), np.uint8)
    rgb[..., 0] = 200  # red
    write_image_atomic(tmp_path / 'img' / 'red.png', rgb)
    back = cv2.imread(str(tmp_path / 'img' / 'red.png'))[..., ::-1]
    np.testing.assert_array_equal(back, rgb)
    assert sorted(p.name for p in tmp_path.rglob('*')) == ['a', 'b.json', 'img', 'red.png']
    with pytest.raises(ValueError, match='RGB uint8'):
        write_image_atomic(tmp_path / 'bad.png', np.zeros((4, 6), np.uint8))


def test_atomic_output_leaves_nothing_on_error(tmp_path):
    out = tmp_path / 'out'
    with pytest.raises(RuntimeError):
        with AtomicOutput(out) as tmp:
            write_json_atomic(tmp / 'annotations' / 'train.json', {})
            raise RuntimeError('converter failed half-way')
    assert list(tmp_path.iterdir()) == []


def test_atomic_output_renames_on_success_and_protects(tmp_path):
    out = tmp_path / 'out'
    with AtomicOutput(out) as tmp:
        write_json_atomic(tmp / 'x.json', 1)
        assert not out.exists()
    assert json.loads((out / 'x.json').read_text()) == 1
    with pytest.raises(FileExistsError):
        with AtomicOutput(out):
            pass
    with pytest.raises(RuntimeError):  # a failed overwrite keeps the old content
        with AtomicOutput(out, overwrite=True) as tmp:
            write_json_atomic(tmp / 'y.json', 2)
            raise RuntimeError
    assert [p.name for p in out.iterdir()] == ['x.json']
    with AtomicOutput(out, overwrite=True) as tmp:
        write_json_atomic(tmp / 'y.json', 2)
    assert [p.name for p in out.iterdir()] == ['y.json']
    assert sorted(p.name for p in tmp_path.iterdir()) == ['out']
    for bad in (tmp_path / 'raw', tmp_path / 'raw' / 'sub', tmp_path):
        with pytest.raises(ValueError, match='protected'):
            AtomicOutput(bad, protect=[tmp_path / 'raw'])


def test_atomic_open_keeps_the_old_file_when_writing_fails(tmp_path):
    target = tmp_path / 'report.md'
    write_atomic(target, 'old')
    with pytest.raises(RuntimeError):
        with atomic_open(target) as f:
            f.write('half of the new')
            raise RuntimeError
    assert target.read_text() == 'old'
    assert [p.name for p in tmp_path.iterdir()] == ['report.md']
    write_atomic(target, b'\x89PNG')
    assert target.read_bytes() == b'\x89PNG'
    with pytest.raises(ValueError, match="mode must be 'w' or 'wb'"):
        with atomic_open(target, 'a'):
            pass
