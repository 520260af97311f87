"""MITOS-ATYPIA-14 converter on a miniature raw copy (tests/data_prep/raw_fixtures.py)."""
import json
import shutil

import numpy as np
import pytest
import tifffile

from data_prep import mitos14
from data_prep.splits import split_groups
from tests.data_prep.raw_fixtures import (MARK, MITOS_SLIDES, config_datasets, load_coco,
                                          make_mitos14, read_png, run_prepare, tree_state)

WIDTH, HEIGHT = 600, 560


@pytest.fixture(scope='module')
def converted(tmp_path_factory):
    raw = tmp_path_factory.mktemp('mitos_raw')
    truth = make_mitos14(raw, size=(WIDTH, HEIGHT))
    before = tree_state(raw)
    out = tmp_path_factory.mktemp('mitos_out') / 'out'
    summary = run_prepare('mitos14', raw, out)
    assert tree_state(raw) == before, 'the raw directory was modified'
    return raw, truth, out, summary


def tile_annotations(out, fold=0):
    """``(image, annotation)`` pairs of the train/val/test tiles of one fold."""
    for split in ('train', 'val', 'test'):
        images, anns, _ = load_coco(out, split, fold)
        for ann in anns:
            yield images[ann['image_id']], ann


def test_slides_found_through_doubled_folders_and_hamamatsu_ignored(converted):
    raw = converted[0]
    slides = mitos14.find_slides(raw)
    assert list(slides) == list(MITOS_SLIDES)
    assert slides['A04'] == raw / 'A04' / 'A04'
    assert slides['A03'] == raw / 'A03'


def test_raw_counts_duplicates_and_empty_csv(converted):
    _, truth, _, summary = converted
    assert summary['raw'] == dict(slides=11, frames=22,
                                  mitoses=sum(map(len, truth.values())),
                                  duplicates_dropped=21, not_mitosis=22)
    assert truth['A04/A04/frames/x40/A04_00Aa.tiff'] == []  # the 0-byte CSV


def test_every_mitosis_recovered_at_its_pixel_in_the_tiles(converted):
    _, truth, out, _ = converted
    expected = {(src, x, y, s) for src, cells in truth.items() for x, y, s in cells}
    found = set()
    for image, ann in tile_annotations(out):
        x, y = ann['point']
        assert 0 <= x < image['width'] and 0 <= y < image['height']
        found.add((image['source'], x + image['x0'], y + image['y0'], ann['score']))
        pixels = read_png(out, image['file_name'])
        assert tuple(pixels[int(y), int(x)]) == MARK  # row = y, column = x
    assert found == expected


def test_boxes_are_32px_centred_and_clipped_to_the_tile(converted):
    out = converted[2]
    clipped = 0
    for image, ann in tile_annotations(out):
        x, y = ann['point']
        x1, y1 = max(x - 16, 0), max(y - 16, 0)
        x2, y2 = min(x + 16, image['width']), min(y + 16, image['height'])
        assert ann['bbox'] == pytest.approx([x1, y1, x2 - x1, y2 - y1])
        clipped += (x2 - x1, y2 - y1) != (32, 32)
    assert clipped > 0  # the border mitoses of the fixture
    corner = [ann['bbox'] for image, ann in tile_annotations(out)
              if (image['x0'] + ann['point'][0], image['y0'] + ann['point'][1])
              == (WIDTH - 1, HEIGHT - 1)]
    assert corner and all(b == [333, 543, 17, 17] for b in corner)  # tile (250, 0)
    left = [ann['bbox'] for image, ann in tile_annotations(out)
            if image['x0'] + ann['point'][0] == 0]
    assert left and all(b[0] == 0 and b[2] == 16 for b in left)


def test_tiles_overlap_by_100_px_and_match_the_raw_frame(converted):
    raw, truth, out, _ = converted
    frame = 'A05/frames/x40/A05_01Bc.tiff'
    pixels = tifffile.imread(raw / frame)
    tiles = {}
    for split in ('train', 'val', 'test'):
        images, _, _ = load_coco(out, split)
        for image in images.values():
            if image['source'] == frame:
                tiles[image['x0'], image['y0']] = image
    # 500 px tiles with overlap 100 on the 600 x 560 frame: two 350 px wide columns
    # (spread evenly, sharing 100 px), one row (560 < 1.125 tiles)
    assert sorted(tiles) == [(0, 0), (250, 0)]
    for (x0, y0), image in tiles.items():
        assert (image['width'], image['height']) == (350, 560)
        assert np.array_equal(read_png(out, image['file_name']),
                              pixels[y0:y0 + 560, x0:x0 + 350])


def test_test_whole_holds_complete_frames_with_tile_grid(converted):
    _, truth, out, summary = converted
    for fold in range(5):
        images, anns, _ = load_coco(out, 'test_whole', fold)
        by_image = {i: [] for i in images}
        for ann in anns:
            by_image[ann['image_id']].append((*ann['point'], ann['score']))
        for image_id, cells in by_image.items():
            image = images[image_id]
            assert (image['x0'], image['y0'], image['width'], image['height']) == \
                (0, 0, WIDTH, HEIGHT)
            assert image['tiles'] == [[0, 0, 350, 560], [250, 0, 350, 560]]
            assert sorted(cells) == sorted(truth[image['source']])


def test_split_4_1_1_by_slide_with_fixed_val_and_5_folds(converted):
    out = converted[2]
    splits = json.loads((out / 'splits.json').read_text())
    assert len(splits['folds']) == 5 and len(splits['val']) == 2
    tested = [s for fold in splits['folds'] for s in fold['test']]
    assert sorted(tested) == sorted(set(MITOS_SLIDES) - set(splits['val']))
    for fold in range(5):
        for split in ('train', 'val', 'test'):
            images, _, _ = load_coco(out, split, fold)
            slides = {im['source'].split('/')[0] for im in images.values()}
            assert slides == set(splits['val'] if split == 'val' else
                                 splits['folds'][fold][split])


def test_same_seed_same_output_and_other_seed_other_split(converted, tmp_path):
    raw, _, out, _ = converted
    run_prepare('mitos14', raw, tmp_path / 'again')
    for fold in range(5):
        for split in ('train', 'val', 'test', 'test_whole'):
            name = f'annotations/fold{fold}/{split}.json'
            assert (tmp_path / 'again' / name).read_text() == (out / name).read_text()
    frames, _ = mitos14.load_frames(raw)
    other = split_groups([f.group for f in frames], seed=1)
    assert other['assignment'] != json.loads((out / 'splits.json').read_text())[
        'assignment']


@pytest.mark.parametrize('line, message', [
    ('abc', "line 3: expected 'x,y,score' with numbers, got 'abc'"),
    ('10,20', "line 3: expected 'x,y,score' with numbers, got '10,20'"),
    ('600,20,0.8', 'line 3: point (x=600, y=20) is outside the 600x560 image'),
    ('10,-1,0.8', 'line 3: point (x=10, y=-1) is outside the 600x560 image'),
    ('10,20,1.5', 'line 3: score 1.5 is outside [0, 1]'),
])
def test_malformed_csv_is_a_clear_error_without_output(converted, tmp_path, line, message):
    raw = tmp_path / 'raw'
    shutil.copytree(converted[0], raw)
    csv = raw / 'A03' / 'mitosis' / 'A03_00Aa_mitosis.csv'
    csv.write_text('1,2,0.5\n3,4,0.6\n' + line + '\n')
    with pytest.raises(ValueError) as err:
        run_prepare('mitos14', raw, tmp_path / 'out')
    assert str(err.value).startswith(f'A03/mitosis/A03_00Aa_mitosis.csv {message}')
    assert not (tmp_path / 'out').exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ['raw']  # no temporary left


def test_missing_mitosis_csv_is_an_error(converted, tmp_path):
    raw = tmp_path / 'raw'
    shutil.copytree(converted[0], raw)
    (raw / 'A12' / 'A12' / 'mitosis' / 'A12_01Bc_mitosis.csv').unlink()
    with pytest.raises(ValueError, match='A12/A12/mitosis/A12_01Bc_mitosis.csv: missing'):
        mitos14.load_frames(raw)


def test_slide_present_twice_is_an_error(converted, tmp_path):
    raw = tmp_path / 'raw'
    shutil.copytree(converted[0] / 'A03', raw / 'A03')
    shutil.copytree(converted[0] / 'A03', raw / 'copy' / 'A03')
    with pytest.raises(ValueError, match='slide A03 is present twice'):
        mitos14.find_slides(raw)


def test_dataset_config_reads_the_converted_data(converted):
    out = converted[2]
    cfg, datasets = config_datasets('mitos14', out)
    # the scans' resolution is on every image entry and in the datasets' metainfo
    for split in ('train', 'val', 'test', 'test_whole'):
        assert {im['mpp'] for im in load_coco(out, split)[0].values()} == {0.2455}
    assert {datasets[split].metainfo['mpp'] for split in datasets} == {0.2455}
    assert cfg.test_cfg == dict(type='TiledTestLoop', tile_size=500, overlap=100,
                                nms_iou=0.3)
    for split, name in (('train', 'train'), ('val', 'val'), ('test', 'test_whole')):
        assert len(datasets[split]) == len(load_coco(out, name)[0])
    sample = datasets['test'][0]['data_samples']
    assert sample.metainfo['tiles'] == [[0, 0, 350, 560], [250, 0, 350, 560]]
    assert tuple(sample.metainfo['ori_shape']) == (HEIGHT, WIDTH)
