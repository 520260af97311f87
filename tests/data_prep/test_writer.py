import json

import cv2
import numpy as np
import pytest

from data_prep.splits import split_groups
from data_prep.writer import SourceImage, write_dataset
from cellio.images import ArrayReader, ImageFileReader


class CountingReader(ArrayReader):
    """Records every region read and whether close() was called."""

    def __init__(self, array):
        super().__init__(array)
        self.regions, self.closed = [], False

    def read_region(self, x0, y0, w, h):
        self.regions.append((x0, y0, w, h))
        return super().read_region(x0, y0, w, h)

    def close(self):
        self.closed = True


def _image(index, group, n_cells=3, size=(300, 200)):
    rng = np.random.default_rng(index)
    width, height = size
    rgb = rng.integers(0, 255, (height, width, 3), dtype=np.uint8)
    points = np.array([[10.0, 10.0], [150.0, 120.0], [290.0, 190.0]])[:n_cells]
    return SourceImage(source=f'{group}/img{index}.bmp', group=group,
                       reader=CountingReader(rgb), width=width, height=height,
                       labels=np.ones(n_cells), points=points,
                       extra=dict(score=np.linspace(0.5, 1, n_cells)))


def _load(root, fold, name):
    return json.loads((root / 'annotations' / f'fold{fold}' / f'{name}.json').read_text())


def test_layout_tiles_annotations_and_whole_test_images(tmp_path):
    images = [_image(i, f's{i}') for i in range(6)]
    splits = split_groups([im.group for im in images], n_folds=1)
    out = tmp_path / 'out'
    summary = write_dataset(out, ['mitosis'], iter(images), splits, tile=150, overlap=50,
                            box_size=32, progress=False)
    # 300 x 200 with tile 150 / overlap 50: 3 x 2 tiles of 133-134 x 125 px, x0 in
    # {0, 84, 167}, y0 in {0, 75}
    assert summary['tile_images'] == 6 * 6
    test_group = splits['folds'][0]['test'][0]
    whole = _load(out, 0, 'test_whole')
    assert [im['source'] for im in whole['images']] == [f'{test_group}/img{test_group[1]}.bmp']
    entry = whole['images'][0]
    assert entry['file_name'] == f'whole/{test_group}/img{test_group[1]}.png'
    assert (entry['x0'], entry['y0'], entry['width'], entry['height']) == (0, 0, 300, 200)
    assert entry['tiles'][:3] == [[0, 0, 134, 125], [84, 0, 133, 125], [167, 0, 133, 125]]
    assert len(whole['annotations']) == 3
    assert whole['annotations'][1]['point'] == [150.0, 120.0]
    assert whole['annotations'][1]['bbox'] == [134.0, 104.0, 32.0, 32.0]

    train = _load(out, 0, 'train')
    tile = next(im for im in train['images'] if (im['x0'], im['y0']) == (84, 75))
    anns = [a for a in train['annotations'] if a['image_id'] == tile['id']]
    assert len(anns) == 1  # (150, 120) lies in tile x 84..217, y 75..200
    assert anns[0]['point'] == [66.0, 45.0]
    assert anns[0]['bbox'] == [50.0, 29.0, 32.0, 32.0]
    assert anns[0]['score'] == 0.75
    png = cv2.imread(str(out / 'images' / tile['file_name']))[..., ::-1]
    source = next(im for im in images if im.source == tile['source'])
    np.testing.assert_array_equal(png, source.reader.array[75:200, 84:217])
    assert all(im.reader.closed for im in images)
    # whole images are read only for the test image
    assert sum((0, 0, 300, 200) in im.reader.regions for im in images) == 1
    assert summary['folds'][0]['train']['annotations'] == len(train['annotations'])
    assert json.loads((out / 'splits.json').read_text()) == splits


def test_single_tile_images_and_empty_tile_dropping(tmp_path):
    images = [_image(i, f's{i}', n_cells=1) for i in range(6)]
    splits = split_groups([im.group for im in images], n_folds=1)
    write_dataset(tmp_path / 'whole', ['c'], images, splits, tile=None, box_size=12,
                  progress=False)
    train = _load(tmp_path / 'whole', 0, 'train')
    assert all(im['file_name'].startswith('whole/') for im in train['images'])
    assert not (tmp_path / 'whole' / 'images' / 'tiles').exists()

    images = [_image(i, f's{i}', n_cells=1) for i in range(6)]
    write_dataset(tmp_path / 'drop', ['c'], images, splits, tile=100, overlap=0,
                  box_size=12, drop_empty_tiles=True, progress=False)
    for name in ('train', 'val', 'test'):
        coco = _load(tmp_path / 'drop', 0, name)
        assert len(coco['images']) == len(coco['annotations'])  # one cell, one tile
    assert len(_load(tmp_path / 'drop', 0, 'test_whole')['images'][0]['tiles']) == 6


def test_errors_name_the_source_and_leave_no_output(tmp_path):
    good = [_image(i, f's{i}') for i in range(5)]
    bad = _image(5, 's5')
    bad.labels[1] = 2
    splits = split_groups([f's{i}' for i in range(6)], n_folds=1)
    with pytest.raises(ValueError, match=r's5/img5.bmp: label 2 of cell 1'):
        write_dataset(tmp_path / 'out', ['c'], good + [bad], splits, tile=150,
                      overlap=0, box_size=12, progress=False)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match=r'x.png: point 0 at \[300.0, 5.0\] is outside'):
        SourceImage('x.png', 'x', None, 300, 200, [1], points=[[300, 5]])
    with pytest.raises(ValueError, match=r'x.png: box 0 .* has no area'):
        SourceImage('x.png', 'x', None, 300, 200, [1], boxes=[[300, 5, 10, 10]])
    with pytest.raises(ValueError, match='points must have shape'):
        SourceImage('x.png', 'x', None, 300, 200, [1, 1], points=[[3, 5]])


def test_image_file_reader_reads_regions_as_rgb(tmp_path):
    bgra = np.zeros((20, 30, 4), np.uint8)
    bgra[..., 2] = 255  # red in BGR(A)
    bgra[..., 3] = 128
    cv2.imwrite(str(tmp_path / 'a.png'), bgra)
    reader = ImageFileReader(tmp_path / 'a.png')
    assert reader.size == (30, 20)
    region = reader.read_region(5, 2, 10, 4)
    assert region.shape == (4, 10, 3) and (region[..., 0] == 255).all()
    with pytest.raises(ValueError, match='not inside'):
        reader.read_region(25, 0, 10, 4)


def test_images_carry_the_source_resolution(tmp_path):
    rgb = np.zeros((64, 96, 3), np.uint8)
    images = [SourceImage(source=f's{i}.png', group=f's{i}', reader=ArrayReader(rgb),
                          width=96, height=64, labels=[1], points=[[10, 10]],
                          mpp=0.25 if i else None) for i in range(6)]
    splits = split_groups([im.group for im in images], n_folds=1)
    write_dataset(tmp_path / 'out', ['cell'], images, splits, tile=64, box_size=8)
    for split in ('train', 'val', 'test', 'test_whole'):
        coco = json.loads((tmp_path / f'out/annotations/fold0/{split}.json').read_text())
        for entry in coco['images']:
            assert entry.get('mpp') == (None if entry['source'] == 's0.png' else 0.25)
    with pytest.raises(ValueError, match='a.png: mpp .* must be positive'):
        SourceImage(source='a.png', group='a', reader=ArrayReader(rgb), width=96,
                    height=64, labels=[], points=[], mpp=0)
