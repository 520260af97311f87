"""NuCLS converter on a miniature raw copy (tests/data_prep/raw_fixtures.py)."""
import json
import shutil
from collections import Counter

import numpy as np
import pytest
from PIL import Image

from data_prep import nucls
from tests.data_prep.raw_fixtures import (config_datasets, load_coco, make_nucls, read_png,
                                          run_prepare, tree_state, write_nucls_csv)


@pytest.fixture(scope='module')
def raw(tmp_path_factory):
    root = tmp_path_factory.mktemp('nucls_raw')
    return root, make_nucls(root, n_slides=7, fovs_per_slide=2, nested_rgb=True)


@pytest.fixture(scope='module')
def converted(raw, tmp_path_factory):
    root, truth = raw
    before = tree_state(root)
    out = tmp_path_factory.mktemp('nucls_out') / 'out'
    summary = run_prepare('nucls', root, out)
    assert tree_state(root) == before, 'the raw directory was modified'
    return root, truth, out, summary


def written(out, splits=('train', 'val', 'test')):
    """``{source: (image, [(class, bbox, raw class), ...])}`` over the given splits."""
    result = {}
    for split in splits:
        images, anns, classes = load_coco(out, split)
        entries = {i: (im, []) for i, im in images.items()}
        for ann in anns:
            entries[ann['image_id']][1].append(
                (classes[ann['category_id'] - 1], ann['bbox'], ann['raw_classification']))
        for image, cells in entries.values():
            assert image['source'] not in result  # untiled: one entry per FOV
            result[image['source']] = image, cells
    return result


def test_boxes_and_classes_recovered_and_clipped(converted):
    _, truth, out, summary = converted
    images = written(out)
    assert set(images) == set(truth)
    for source, (image, cells) in images.items():
        assert sorted(map(repr, cells)) == sorted(map(repr, truth[source]))
    clipped = [b for cells in truth.values() for _, b, _ in cells if b[0] == 0 or b[1] == 0]
    assert clipped  # the fixture has boxes crossing the top/left border
    counts = Counter(c for cells in truth.values() for c, _, _ in cells)
    assert {k: summary['raw'][k] for k in counts} == counts
    assert load_coco(out, 'train')[2] == ['tumor', 'lymphocyte', 'stromal']


def test_images_untiled_with_size_from_the_png(converted):
    root, _, out, _ = converted
    for source, (image, _) in written(out).items():
        pixels = np.asarray(Image.open(root / source).convert('RGB'))
        assert (image['x0'], image['y0']) == (0, 0)
        assert (image['height'], image['width']) == pixels.shape[:2]
        assert np.array_equal(read_png(out, image['file_name']), pixels)
        assert source.startswith('rgb/rgb/')


def test_fov_without_cells_of_interest_is_kept_empty(converted):
    _, truth, out, summary = converted
    empty = [s for s, cells in truth.items() if not cells]
    assert len(empty) == 1
    assert written(out)[empty[0]][1] == []
    assert summary['raw']['not_of_interest'] > 0


def test_split_4_1_1_by_slide(converted):
    out = converted[2]
    splits = json.loads((out / 'splits.json').read_text())
    fold = splits['folds'][0]
    assert (len(fold['train']), len(splits['val']), len(fold['test'])) == (5, 1, 1)
    for split in ('train', 'val', 'test'):
        slides = {src.split('/')[-1].split('_id')[0] for src in written(out, (split,))}
        assert slides == set(splits['val'] if split == 'val' else fold[split])


def test_flat_rgb_folder(tmp_path):
    truth = make_nucls(tmp_path / 'raw', n_slides=2, fovs_per_slide=1, nested_rgb=False)
    images, counts = nucls.load_fovs(tmp_path / 'raw')
    assert sorted(im.source for im in images) == sorted(truth)
    assert all(s.startswith('rgb/') and not s.startswith('rgb/rgb/') for s in truth)


@pytest.mark.parametrize('raw_column, index_column', [
    ('raw_classification', True), ('group', False), ('group', True)])
def test_csv_variants(tmp_path, raw_column, index_column):
    path = tmp_path / 'x.csv'
    write_nucls_csv(path, [('plasma_cell', 'plasma_cell', 'sTIL', 'polyline', 1, 2, 5, 9,
                            '1,5,5,1', '2,2,9,9')], raw_column, index_column)
    assert nucls.read_fov_csv(path, 'x.csv') == [('plasma_cell', 'sTIL', (1, 2, 5, 9), 2)]


HEADER = ',raw_classification,main_classification,super_classification,type,xmin,ymin,' \
         'xmax,ymax,coords_x,coords_y\n'
ROW = '0,tumor,tumor_nonMitotic,tumor_any,rectangle,10,12,20,24,"10,20","12,24"\n'


@pytest.mark.parametrize('content, message', [
    (HEADER.replace(',xmin', ''), "line 1: missing column(s) ['xmin']"),
    (HEADER.replace('raw_classification', 'label'),
     "line 1: missing column(s) ['raw_classification or group']"),
    (HEADER + ROW + ROW.replace('tumor_any', 'tumour'),
     "line 3: unknown super_classification 'tumour'"),
    (HEADER + ROW.replace(',20,24,', ',x,24,'), 'line 2: expected numbers in xmin, ymin, '
                                                'xmax, ymax'),
    (HEADER + ROW.replace('0,tumor,', 'tumor,'), 'line 2: expected 11 fields as in the '
                                                 'header, got 10'),
    (HEADER + ROW.replace(',20,24,', ',5,24,'), 'line 2: box xmin=10 ymin=12 xmax=5 ymax=24 '
                                                'has xmax < xmin'),
    (HEADER + ROW.replace(',10,12,20,24,', ',1000,12,1020,24,'), 'line 2: box xmin=1000 '
                                                                 'ymin=12 xmax=1020'),
])
def test_malformed_csv_is_a_clear_error_without_output(raw, tmp_path, content, message):
    copy = tmp_path / 'raw'
    shutil.copytree(raw[0], copy)
    csv_path = sorted((copy / 'csv').glob('*.csv'))[3]
    csv_path.write_text(content)
    with pytest.raises(ValueError) as err:
        run_prepare('nucls', copy, tmp_path / 'out')
    assert str(err.value).startswith(f'csv/{csv_path.name} {message}')
    assert sorted(p.name for p in tmp_path.iterdir()) == ['raw']


def test_unmatched_files_and_bad_fov_names_are_errors(raw, tmp_path):
    copy = tmp_path / 'raw'
    shutil.copytree(raw[0], copy)
    png = sorted((copy / 'rgb' / 'rgb').glob('*.png'))[0]
    shutil.copy(png, png.with_name('TCGA-XX_left-1.png'))
    with pytest.raises(ValueError, match='rgb/rgb/TCGA-XX_left-1.png: no matching '
                                         'csv/TCGA-XX_left-1.csv'):
        nucls.load_fovs(copy)
    shutil.copy(copy / 'csv' / f'{png.stem}.csv', copy / 'csv' / 'TCGA-XX_left-1.csv')
    with pytest.raises(ValueError, match="FOV name 'TCGA-XX_left-1' has no slide part"):
        nucls.load_fovs(copy)


def test_dataset_config_reads_the_converted_data(converted):
    out = converted[2]
    cfg, datasets = config_datasets('nucls', out)
    # the scans' resolution is on every image entry and in the datasets' metainfo
    for split in ('train', 'val', 'test', 'test_whole'):
        assert {im['mpp'] for im in load_coco(out, split)[0].values()} == {0.2}
    assert {datasets[split].metainfo['mpp'] for split in datasets} == {0.2}
    assert cfg.test_cfg == dict(type='TestLoop') and cfg.num_classes == 3
    for split in ('train', 'val', 'test'):
        assert len(datasets[split]) == len(load_coco(out, split)[0])
    labels = {int(label) for i in range(len(datasets['train']))
              for label in datasets['train'][i]['data_samples'].gt_instances.labels}
    assert labels == {0, 1, 2}
