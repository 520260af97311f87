"""TUPAC16 converter on a miniature raw copy (tests/data_prep/raw_fixtures.py)."""
import json
import shutil

import numpy as np
import pytest
import tifffile

from data_prep import tupac
from cellio.tiff import TiffRegionReader
from tests.data_prep.raw_fixtures import (MARK, config_datasets, load_coco, make_tupac,
                                          read_png, run_prepare, tree_state)

WIDTH, HEIGHT = 1100, 900  # patches: x0 in {0, 367, 734}, y0 in {0, 450} (GRID)


@pytest.fixture(scope='module')
def raw(tmp_path_factory):
    root = tmp_path_factory.mktemp('tupac_raw')
    return root, make_tupac(root, size=(WIDTH, HEIGHT))


@pytest.fixture(scope='module')
def converted(raw, tmp_path_factory):
    root, truth = raw
    before = tree_state(root)
    out = tmp_path_factory.mktemp('tupac_out') / 'out'
    summary = run_prepare('tupac', root, out)
    assert tree_state(root) == before, 'the raw directory was modified'
    return root, truth, out, summary


def patches(out, splits=('train', 'val', 'test')):
    """``[(image, [annotations])]`` of the patches of fold 0."""
    result = []
    for split in splits:
        images, anns, _ = load_coco(out, split)
        by_id = {i: (im, []) for i, im in images.items()}
        for ann in anns:
            by_id[ann['image_id']][1].append(ann)
        result.extend(by_id.values())
    return result


def test_alternative_labels_recovered_from_row_col_at_their_pixels(converted):
    _, truth, out, _ = converted
    expected = {(src, x, y, bool(flag)) for src, t in truth.items()
                for (x, y), flag in zip(t['alternative'], t['in_original'])}
    found = set()
    for image, anns in patches(out):
        pixels = read_png(out, image['file_name'])
        for ann in anns:
            x, y = ann['point']
            found.add((image['source'], x + image['x0'], y + image['y0'], ann['original']))
            assert tuple(pixels[int(y), int(x)]) == MARK
    assert found == expected
    assert not any('24' in src.split('/') for src, *_ in found)  # outside cases 01-23


def test_raw_counts_record_original_and_alternative_labels(converted):
    _, truth, _, summary = converted
    assert summary['raw'] == dict(
        cases=23, tiles=26, tiles_without_original_csv=1,
        original_labels=sum(len(t['original']) for t in truth.values()),
        alternative_labels=sum(len(t['alternative']) for t in truth.values()),
        alternative_in_original=sum(int(t['in_original'].sum()) for t in truth.values()))


#: The patches of a 1100 x 900 fixture image at 500 px without overlap: 3 x 2, spread
#: evenly (cellio.tiling.tile_spans).
GRID = [(x, y, w, 450) for y in (0, 450) for x, w in ((0, 367), (367, 367), (734, 366))]


def test_500px_patches_without_overlap_and_without_empty_ones(converted):
    root, truth, out, _ = converted
    kept = patches(out)
    assert all(anns for _, anns in kept)  # no patch without cells
    for source, t in truth.items():
        offsets = {(im['x0'], im['y0']) for im, _ in kept if im['source'] == source}
        assert offsets <= {(x, y) for x, y, _, _ in GRID}
        for x, y in t['alternative']:  # every cell's patch is there
            assert any(x0 <= x < x0 + w and y0 <= y < y0 + h for x0, y0, w, h in GRID
                       if (x0, y0) in offsets)
    image = next(im for im, _ in kept if im['source'] == 'mitoses_image_data_part_1/01/01.tif'
                 and (im['x0'], im['y0']) == (734, 450))
    raw_pixels = tifffile.imread(root / image['source'])
    assert np.array_equal(read_png(out, image['file_name']),
                          raw_pixels[450:900, 734:1100])


def test_test_whole_lists_the_full_patch_grid(converted):
    _, truth, out, _ = converted
    images, anns, _ = load_coco(out, 'test_whole')
    assert images
    for image in images.values():
        assert (image['width'], image['height']) == (WIDTH, HEIGHT)
        assert sorted(map(tuple, image['tiles'])) == sorted(GRID)
        cells = sorted(tuple(a['point']) for a in anns if a['image_id'] == image['id'])
        assert cells == sorted(map(tuple, truth[image['source']]['alternative']))


def test_split_4_1_1_by_case(converted):
    out = converted[2]
    splits = json.loads((out / 'splits.json').read_text())
    assert len(splits['folds']) == 1
    sizes = (len(splits['folds'][0]['train']), len(splits['val']),
             len(splits['folds'][0]['test']))
    assert sizes == (15, 4, 4)
    for split in ('train', 'val', 'test'):
        images, _, _ = load_coco(out, split)
        cases = {im['source'].split('/')[1] for im in images.values()}
        assert cases <= set(splits['val'] if split == 'val' else splits['folds'][0][split])


def test_original_labels_option(raw, tmp_path):
    root, truth = raw
    summary = run_prepare('tupac', root, tmp_path / 'out', '--labels', 'original',
                          '--cases', '1-6')
    assert summary['raw']['original_labels'] == sum(
        len(t['original']) for s, t in truth.items() if s.split('/')[1] <= '06')
    found = set()
    for image, anns in patches(tmp_path / 'out', ('train', 'val', 'test')):
        for ann in anns:
            assert 'original' not in ann
            found.add((image['source'], ann['point'][0] + image['x0'],
                       ann['point'][1] + image['y0']))
    expected = {(s, x, y) for s, t in truth.items() if s.split('/')[1] <= '06'
                for x, y in t['original']}
    assert found == expected  # case 05 (no CSV) and 06 (0-byte CSV) contribute nothing


def test_alternative_dir_option_and_cases_parsing(raw, tmp_path):
    root, _ = raw
    copy = tmp_path / 'raw'
    shutil.copytree(root, copy)
    shutil.move(copy / 'TUPAC_AL', tmp_path / 'elsewhere')
    with pytest.raises(ValueError, match='TUPAC_AL/mitoses_ground_truth: alternative '
                                         'label folder not found'):
        tupac.load_tiles(copy, ['01'])
    tiles, counts = tupac.load_tiles(
        copy, ['01'], alternative_dir=tmp_path / 'elsewhere' / 'mitoses_ground_truth')
    assert counts['tiles'] == 2 and counts['alternative_labels'] > 0
    assert tupac.parse_cases('1-3,10, 07') == ['01', '02', '03', '07', '10']
    with pytest.raises(ValueError, match="--cases 'x': expected numbers"):
        tupac.parse_cases('x')


def test_tiles_are_read_region_by_region(converted):
    root, _, _, _ = converted
    tiles, _ = tupac.load_tiles(root, ['01'])
    tiles[0].reader.read_region(0, 0, 10, 10)
    assert isinstance(tiles[0].reader._reader, TiffRegionReader)
    tiles[0].reader.close()


@pytest.mark.parametrize('path, content, message', [
    ('mitoses_ground_truth/01/01.csv', '10,20\nabc\n',
     "mitoses_ground_truth/01/01.csv line 2: expected 'row,col' with numbers, got 'abc'"),
    ('TUPAC_AL/mitoses_ground_truth/02/01.csv', '10,20,30\n',
     "TUPAC_AL/mitoses_ground_truth/02/01.csv line 1: expected 'row,col' with numbers"),
    ('mitoses_ground_truth/03/02.csv', '900,20\n',  # row 900 = y 900 >= height
     'mitoses_ground_truth/03/02.csv line 1: point (x=20, y=900) is outside the '
     '1100x900 image'),
    ('mitoses_ground_truth/01/07.csv', '10,20\n',
     'mitoses_ground_truth/01/07.csv: no image tile 07.tif in case 01'),
])
def test_malformed_labels_are_clear_errors_without_output(raw, tmp_path, path, content,
                                                          message):
    copy = tmp_path / 'raw'
    shutil.copytree(raw[0], copy)
    (copy / path).write_text(content)
    with pytest.raises(ValueError) as err:
        run_prepare('tupac', copy, tmp_path / 'out')
    assert str(err.value).startswith(message)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['raw']


def test_missing_or_duplicated_cases_are_errors(raw, tmp_path):
    root, _ = raw
    with pytest.raises(ValueError, match=r"cases \['25'\] not found"):
        tupac.load_tiles(root, tupac.parse_cases('1-25'))
    copy = tmp_path / 'raw'
    shutil.copytree(root, copy)
    shutil.copytree(copy / 'mitoses_image_data_part_1' / '02',
                    copy / 'mitoses_image_data_part_3' / '02')
    with pytest.raises(ValueError, match='case 02 is present twice'):
        tupac.load_tiles(copy, ['02'])


def test_dataset_config_reads_the_converted_data(converted):
    out = converted[2]
    cfg, datasets = config_datasets('tupac', out)
    # the scans' resolution is on every image entry and in the datasets' metainfo
    for split in ('train', 'val', 'test', 'test_whole'):
        assert {im['mpp'] for im in load_coco(out, split)[0].values()} == {0.25}
    assert {datasets[split].metainfo['mpp'] for split in datasets} == {0.25}
    assert cfg.test_cfg == dict(type='TestLoop')  # evaluated per patch
    for split in ('train', 'val', 'test'):
        assert len(datasets[split]) == len(load_coco(out, split)[0])
    item = datasets['test'][0]
    assert tuple(item['inputs'].shape) in ((3, 450, 367), (3, 450, 366))
    assert len(item['data_samples'].gt_instances) > 0


def test_tupac_deletion_keeps_one_original_label_per_patch(converted):
    """configs/_base_/deletion/tupac_original_keep1.py on the converted train patches."""
    from data_prep.delete import load_scheme_config
    from mmdet_pu.datasets import CellCocoDataset, delete_from_coco
    out = converted[2]
    deletion = load_scheme_config('tupac_original_keep1')[0]
    dataset = CellCocoDataset(data_root=f'{out}/', ann_file='annotations/fold0/train.json',
                              data_prefix=dict(img='images/'), pipeline=[],
                              metainfo=dict(classes=('mitosis', )), deletion=deletion)
    images, anns, _ = load_coco(out, 'train')
    with_original = {a['image_id'] for a in anns if a['original']}
    assert 0 < len(with_original) < len(images)  # some patches have only new labels
    for info in dataset:
        assert len(info['instances']) == (info['img_id'] in with_original)
        assert all(inst['original'] for inst in info['instances'])
    exported = delete_from_coco(
        json.loads((out / 'annotations' / 'fold0' / 'train.json').read_text()), deletion)
    assert sorted((a['image_id'], tuple(a['point'])) for a in exported['annotations']) == \
        sorted((info['img_id'], tuple(inst['point']))
               for info in dataset for inst in info['instances'])
