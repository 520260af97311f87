"""CRCHistoPhenotypes converter on a miniature raw copy (tests/data_prep/raw_fixtures.py)."""
import json
import shutil

import numpy as np
import pytest
import scipy.io
from PIL import Image

from data_prep import crchisto
from tests.data_prep.raw_fixtures import (CRC_CLASSES, MARK, config_datasets, load_coco,
                                          make_crchisto, make_crchisto_classes, read_png,
                                          run_prepare, tree_state)

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
    assert summary['raw'] == dict(images=12, nuclei=sum(map(len, truth.values())),
                                  clipped_points=1)  # img1's [0.7, 10.2]
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
    assert boxes[0, 9.2, 0, 0] == pytest.approx([0, 3.2, 6, 12])  # [0.7, 10.2]: clipped
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
    ({'detection': np.array([[5.0, 5.0], [WIDTH + 2.0, 7.0]])},
     'img4/img4_detection.mat (after subtracting 1 from the MATLAB coordinates; points up '
     f'to 1 px outside are clipped) entry 2: point (x={WIDTH + 1}, y=6) is outside the '
     f'{WIDTH}x{HEIGHT} image'),
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
    with pytest.raises(ValueError, match='no CRCHistoPhenotypes detection files'):
        crchisto.load_images(raw / 'CRCHistoPhenotypes_2016_04_28' / 'Classification')


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


# ------------------------------------------------------------------ border tolerance
@pytest.mark.parametrize('matlab, expected', [
    ([[371.043, 0.15002]], [[370.043, 0.0]]),  # the official img8's 0.85 px above
    ([[WIDTH + 1.9, 20.0]], [[WIDTH - 1.0, 19.0]]),  # 0-based x = WIDTH + 0.9
    ([[20.0, HEIGHT + 1.5]], [[19.0, HEIGHT - 1.0]]),
    ([[0.0, 0.0]], [[0.0, 0.0]]),  # 1 px above and left of the first pixel
])
def test_points_up_to_1px_outside_are_clipped_and_counted(converted, tmp_path,
                                                          matlab, expected):
    raw = tmp_path / 'raw'
    shutil.copytree(converted[0], raw)
    mat = raw / DETECTION / 'img4' / 'img4_detection.mat'
    inside = [[30.0, 40.0]]
    scipy.io.savemat(mat, {'detection': np.array(inside + matlab)})
    images, counts = crchisto.load_images(raw)
    img4 = next(im for im in images if im.group == 'img4')
    assert img4.points == pytest.approx(np.array([[29.0, 39.0]] + expected))
    assert counts['clipped_points'] == 1 + 1  # img1's [0.7, 10.2] and this one


# ------------------------------------------------------------------ classes
def test_classify_pairs_nearest_first_one_to_one_within_the_radius():
    nuclei = np.array([[10.0, 10.0], [14.0, 10.0], [100.0, 100.0], [200.0, 200.0]])
    classified = {1: np.array([[12.5, 10.0]]),   # 2.5 from [0], 1.5 from [1]: takes [1]
                  2: np.array([[11.0, 10.0]]),   # then [0], the nearest still free
                  3: np.array([[100.0, 106.5]]),  # 6.5 px off: a nucleus of its own
                  4: np.zeros((0, 2))}
    points, labels, unclassified, counts = crchisto.classify(nuclei, classified)
    assert points.tolist() == nuclei.tolist() + [[100.0, 106.5]]
    assert labels.tolist() == [2, 1, 4, 4, 3]
    assert unclassified.tolist() == [False, False, True, True, False]
    assert counts == dict(classified_only=1, unclassified=2)


@pytest.mark.parametrize('layout', ['official', 'split'])
def test_classes_from_either_layout(tmp_path, layout):
    raw = tmp_path / 'raw'
    truth = make_crchisto_classes(raw, layout=layout)
    before = tree_state(raw)
    out = tmp_path / 'out'
    summary = run_prepare('crchisto', raw, out, '--classes')
    assert tree_state(raw) == before
    labels = np.concatenate([t[1][~t[2]] for t in truth.values()])
    expected_counts = {cls: int((labels == c).sum()) for c, cls in enumerate(CRC_CLASSES, 1)}
    assert summary['raw'] == dict(
        images=6, nuclei=sum(len(t[0]) for t in truth.values()), clipped_points=1,
        classified_only=1, unclassified=sum(int(t[2].sum()) for t in truth.values()),
        **expected_counts)
    images, anns, categories = load_coco(out, 'test_whole')
    assert categories == list(CRC_CLASSES)
    assert images, 'no test image in fold 0'
    for image in images.values():
        points, labels, unclassified = truth[image['source']]
        found = sorted((round(a['point'][0], 6), round(a['point'][1], 6), a['category_id'],
                        a['iscrowd'], a['unclassified'])
                       for a in anns if a['image_id'] == image['id'])
        assert found == sorted((round(x, 6), round(y, 6), int(c), int(u), bool(u))
                               for (x, y), c, u in zip(points, labels, unclassified))
        # imgN.bmp is the image, not the repository's other BMPs beside it
        pixels = read_png(out, image['file_name'])
        for x, y in points[:len(points) - (image['source'].endswith('img1.bmp'))]:
            assert tuple(pixels[int(round(y)), int(round(x))]) == MARK
    # the fold's counts keep the ignored regions apart from the classes
    test_counts = summary['folds'][0]['test_whole']
    assert sum(test_counts['per_class'].values()) + test_counts['ignored'] == \
        test_counts['annotations']


def test_classes_need_all_four_files(tmp_path):
    raw = tmp_path / 'raw'
    make_crchisto_classes(raw, layout='split')
    next(raw.rglob('img3_others.mat')).unlink()
    with pytest.raises(ValueError, match=r'img3: img3_others.mat missing \(--classes needs '
                                         r'all four img3_<class>.mat files\)'):
        crchisto.load_images(raw, with_classes=True)
    with pytest.raises(ValueError, match='img2: detection files in two folders'):
        twin = raw / 'cls_and_det' / 'extra' / 'img2'
        shutil.copytree(next(raw.rglob('img2_detection.mat')).parent, twin)
        crchisto.load_images(raw)


def test_binary_conversion_reads_no_classification_file(converted):
    """The fixture's Classification folder holds one class file of four: fine without
    --classes."""
    images, counts = crchisto.load_images(converted[0])
    assert all(set(im.labels.tolist()) <= {1} and not im.extra for im in images)
