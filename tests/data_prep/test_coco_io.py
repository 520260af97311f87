import json

import cv2
import numpy as np
import pytest

from data_prep.coco_io import (AtomicOutput, CocoBuilder, write_image_atomic,
                               write_json_atomic)


def test_coco_builder_ids_area_and_extra_fields():
    builder = CocoBuilder(['tumor', 'lymphocyte'])
    img = builder.add_image('tiles/a_x0_y0.png', 250, 250, 'a.bmp', x0=0, y0=200)
    ann = builder.add_annotation(img, [1, 2, 12, 10], 2, point=[7, 7], score=0.75)
    coco = builder.to_dict()
    assert coco['categories'] == [dict(id=1, name='tumor'), dict(id=2, name='lymphocyte')]
    assert coco['images'][0] == dict(id=1, file_name='tiles/a_x0_y0.png', width=250,
                                     height=250, source='a.bmp', x0=0, y0=200)
    assert coco['annotations'][0] == dict(
        id=ann, image_id=img, category_id=2, bbox=[1.0, 2.0, 12.0, 10.0], area=120.0,
        iscrowd=0, point=[7.0, 7.0], score=0.75)
    json.dumps(coco)  # serialisable


@pytest.mark.parametrize('image_id, bbox, category', [
    (2, [0, 0, 5, 5], 1), (1, [0, 0, 0, 5], 1), (1, [0, 0, 5, 5], 3)])
def test_coco_builder_rejects_bad_annotations(image_id, bbox, category):
    builder = CocoBuilder(['a', 'b'])
    builder.add_image('x.png', 10, 10, 'x.png')
    with pytest.raises(ValueError):
        builder.add_annotation(image_id, bbox, category)


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
