"""CRCHistoPhenotypes converter on a miniature raw copy (tests/data_prep/raw_fixtures.py)."""
import json
import shutil

import numpy as np
import pytest
import scipy.io
from PIL import Image

from data_prep import crchisto
from tests.data_prep.raw_fixtures import (MARK, config_datasets, load_coco, make_crchisto,
                                          read_png, run_prepare, tree_state)

WIDTH, HEIGHT = 400, 360
DETECTION = 'CRCHistoPhenotypes_2016_04_28/Detection'


@pytest.fixture(scope='module')
def converted(tmp_path_factory):
    raw = tmp_path_factory.mktemp('crc_raw')
    truth = make_crchisto(raw, n_images=12, size=(WIDTH, HEIGHT))
    before = tree_state(raw)
    out = tmp_path_factory.mktemp('crc_out') / 'out'
    summary = run_prepare('crchisto', raw, out)
    assert tree_state(raw) == before, 'the raw directory was modified'
    return raw, truth, out, summary


def tiles_of(out, fold=0):
    """``{image id: (image, [annotations])}`` over the train/val/test tiles of a fold."""
    for split in ('train', 'val', 'test'):
        images, anns, _ = load_coco(out, split, fold)
        tiles = {i: (im, []) for i, im in images.items()}
        for ann in anns:
            tiles[ann['image_id']][1].append(ann)
        yield from tiles.values()


def test_every_nucleus_recovered_0_based_at_its_pixel(converted):
    _, truth, out, summary = converted
    assert summary['raw'] == dict(images=12, nuclei=sum(map(len, truth.values())))
    expected = {(src, round(x, 6), round(y, 6)) for src, points in truth.items()
                for x, y in points}
    found = set()
    for image, anns in tiles_of(out):
        pixels = read_png(out, image['file_name'])
        for ann in anns:
            x, y = ann['point']
            found.add((image['source'], round(x + image['x0'], 6), round(y + image['y0'], 6)))
            row, col = int(round(y)), int(round(x))
            if row < image['height'] and col < image['width']:  # 249.6 rounds off-tile
                assert tuple(pixels[row, col]) == MARK
    assert found == expected


def test_matlab_border_points_become_0_based(converted):
    out = converted[2]
    source = f'{DETECTION}/img1/img1.bmp'  # its .mat ends with the four points below
    boxes = {}
    for image, anns in tiles_of(out):
        for ann in anns:
            if image['source'] == source:
                x, y = ann['point']
                boxes[round(x + image['x0'], 6), round(y + image['y0'], 6),
                      image['x0'], image['y0']] = ann['bbox']
    assert boxes[0, 0, 0, 0] == [0, 0, 6, 6]  # MATLAB [1, 1]; 12 x 12 box clipped
    # the 400 x 360 images: 2 x 2 tiles of 225 x 205 px at x0 0, 175 and y0 0, 155
    assert boxes[WIDTH - 1, HEIGHT - 1, 175, 155] == [218, 198, 7, 7]  # [W, H]
    assert boxes[0, 9.2, 0, 0] == pytest.approx([0, 3.2, 6, 12])  # [0.7, 10.2]: snapped
    assert boxes[WIDTH - 1.2, 4, 175, 0] == pytest.approx([217.8, 0, 7.2, 10])
    interior = [b for b in boxes.values() if b[0] > 0 and b[1] > 0 and
                b[0] + b[2] < 225 and b[1] + b[3] < 205]
    assert interior and all(b[2:] == pytest.approx([12, 12]) for b in interior)


def test_empty_detections_keep_their_tiles(converted):
    _, truth, out, _ = converted
    for i in (2, 3):  # (0, 0) and (0, 2) arrays
        assert len(truth[f'{DETECTION}/img{i}/img{i}.bmp']) == 0
        tiles = [anns for image, anns in tiles_of(out)
                 if image['source'] == f'{DETECTION}/img{i}/img{i}.bmp']
        assert len(tiles) == 4 and all(anns == [] for anns in tiles)


def test_rgba_bmp_is_written_as_rgb_tiles(converted):
    raw, _, out, _ = converted
    source = f'{DETECTION}/img6/img6.bmp'
    with Image.open(raw / source) as im:
        assert im.mode == 'RGBA'
        rgb = np.asarray(im)[..., :3]
    offsets = set()
    for image, _ in tiles_of(out):
        if image['source'] == source:
            x0, y0 = image['x0'], image['y0']
            offsets.add((x0, y0))
            assert (image['width'], image['height']) == (225, 205)
            assert np.array_equal(read_png(out, image['file_name']),
                                  rgb[y0:y0 + 205, x0:x0 + 225])
    assert offsets == {(0, 0), (175, 0), (0, 155), (175, 155)}


def test_split_by_image_4_1_1_fixed_val_5_folds(converted):
    out = converted[2]
    splits = json.loads((out / 'splits.json').read_text())
    assert len(splits['val']) == 2 and len(splits['folds']) == 5
    assert sorted(g for f in splits['folds'] for g in f['test']) == sorted(
        set(f'img{i}' for i in range(1, 13)) - set(splits['val']))
    for fold in range(5):
        images, _, _ = load_coco(out, 'test_whole', fold)
        assert sorted(im['source'].split('/')[-2] for im in images.values()) == \
            splits['folds'][fold]['test']


@pytest.mark.parametrize('below', ['', 'CRCHistoPhenotypes_2016_04_28', DETECTION])
def test_src_may_be_the_root_or_the_detection_folder(converted, below):
    raw = converted[0]
    images, counts = crchisto.load_images(raw / below)
    assert counts['images'] == 12
    assert images[0].source.endswith('img1/img1.bmp')
    assert [im.group for im in images] == [f'img{i}' for i in range(1, 13)]  # numeric order


@pytest.mark.parametrize('content, message', [
    ({'points': np.ones((2, 2))},
     "img4/img4_detection.mat: no variable 'detection' (found ['points'])"),
    ({'detection': np.ones((3, 3))},
     "img4/img4_detection.mat: variable 'detection' has shape (3, 3)"),
    ({'detection': np.array([[5.0, 5.0], [WIDTH + 1.0, 7.0]])},
     'img4/img4_detection.mat (after subtracting 1 from the MATLAB coordinates) entry 2: '
     f'point (x={WIDTH}, y=6) is outside the {WIDTH}x{HEIGHT} image'),
    ({'detection': np.array([[5.0, np.nan]])},
     "img4/img4_detection.mat: row 1 of 'detection' is not finite"),
])
def test_malformed_mat_is_a_clear_error_without_output(converted, tmp_path, content,
                                                       message):
    raw = tmp_path / 'raw'
    shutil.copytree(converted[0], raw)
    scipy.io.savemat(raw / DETECTION / 'img4' / 'img4_detection.mat', content)
    with pytest.raises(ValueError) as err:
        run_prepare('crchisto', raw, tmp_path / 'out')
    assert str(err.value).startswith(f'{DETECTION}/{message}')
    assert sorted(p.name for p in tmp_path.iterdir()) == ['raw']


def test_missing_or_unreadable_files_are_errors(converted, tmp_path):
    raw = tmp_path / 'raw'
    shutil.copytree(converted[0], raw)
    (raw / DETECTION / 'img5' / 'img5_detection.mat').write_text('not a mat file')
    with pytest.raises(ValueError, match='img5/img5_detection.mat: not a readable MATLAB'):
        crchisto.load_images(raw)
    (raw / DETECTION / 'img5' / 'img5.bmp').unlink()
    with pytest.raises(ValueError, match='img5/img5.bmp: missing'):
        crchisto.load_images(raw)
    with pytest.raises(ValueError, match='no CRCHistoPhenotypes detection images'):
        crchisto.load_images(raw / DETECTION / 'img1')


def test_dataset_config_reads_the_converted_data(converted):
    out = converted[2]
    cfg, datasets = config_datasets('crchisto', out)
    # the scans' resolution is on every image entry and in the datasets' metainfo
    for split in ('train', 'val', 'test', 'test_whole'):
        assert {im['mpp'] for im in load_coco(out, split)[0].values()} == {0.55}
    assert {datasets[split].metainfo['mpp'] for split in datasets} == {0.55}
    assert cfg.test_cfg == dict(type='TiledTestLoop', tile_size=250, overlap=50,
                                nms_iou=0.3)
    for split, name in (('train', 'train'), ('val', 'val'), ('test', 'test_whole')):
        assert len(datasets[split]) == len(load_coco(out, name)[0])
    sample = datasets['test'][0]['data_samples']
    assert sorted(sample.metainfo['tiles']) == [[0, 0, 225, 205], [0, 155, 225, 205],
                                                [175, 0, 225, 205], [175, 155, 225, 205]]
    assert tuple(sample.metainfo['ori_shape']) == (HEIGHT, WIDTH)
