"""Instance label images -> COCO (``prepare.py masks`` and the ``mnfinder`` preset) on
small generated label images with known instances."""
import json

import numpy as np
import pytest
import tifffile
from PIL import Image

from data_prep.masks import find_pairs, load_pair
from data_prep.prepare import main
from cellio.instance_masks import (id_pieces, instance_types, instances,
                                   read_intensity_image, read_label_image, to_uint8)
from tests._cli import run_script
from tests.data_prep.raw_fixtures import load_coco, read_png, tree_state

SIZE = (96, 80)  # width, height


def label_image(rng, n=6, size=SIZE, touching=True):
    """(H, W) int ids of ``n`` rectangles (two touching ones when ``touching``) and
    their boxes ``{id: [x, y, w, h]}``."""
    width, height = size
    ids = np.zeros((height, width), np.int64)
    boxes = {}
    for k in range(1, n + 1):
        w, h = rng.integers(6, 14, size=2)
        x, y = rng.integers(0, width - w), rng.integers(0, height - h)
        ids[y:y + h, x:x + w] = k
        boxes[k] = None
    if touching:  # two instances sharing an edge keep their ids
        ids[2:10, 2:8] = n + 1
        ids[2:10, 8:14] = n + 2
    for k in np.unique(ids)[1:]:
        ys, xs = np.nonzero(ids == k)
        boxes[int(k)] = [xs.min(), ys.min(), xs.max() + 1 - xs.min(), ys.max() + 1 - ys.min()]
    return ids, {k: b for k, b in boxes.items() if b is not None}


def write_pair(images, masks, stem, ids, mode='uint16', image_suffix='.tif'):
    """A 16-bit (or 8-bit) grey image with bright instances and its label image."""
    images.mkdir(parents=True, exist_ok=True)
    masks.mkdir(parents=True, exist_ok=True)
    intensity = (1000 + 3000 * (ids > 0)).astype(np.uint16)
    if image_suffix == '.tif':
        tifffile.imwrite(images / f'{stem}.tif', intensity)
    else:
        Image.fromarray((intensity // 16).astype(np.uint8)).save(images / f'{stem}.png')
    if mode == 'uint16':
        Image.fromarray(ids.astype(np.uint16)).save(masks / f'{stem}.png')
    elif mode == 'int32-tif':
        tifffile.imwrite(masks / f'{stem}.tif', ids.astype(np.int32))
    elif mode == 'rgba-gb':
        rgba = np.zeros((*ids.shape, 4), np.uint8)
        rgba[..., 0] = 255
        rgba[..., 1] = ids // 256
        rgba[..., 2] = ids % 256
        rgba[..., 3] = np.where(ids > 0, 255, 0)
        Image.fromarray(rgba, 'RGBA').save(masks / f'{stem}.png')


@pytest.fixture(scope='module')
def raw(tmp_path_factory):
    root = tmp_path_factory.mktemp('masks_raw')
    rng = np.random.default_rng(0)
    truth = {}
    for i, group in enumerate(['a', 'a', 'b', 'b', 'c', 'c']):
        ids, boxes = label_image(rng)
        ids[ids > 0] += 300 * i  # ids above 255: 16-bit
        boxes = {k + 300 * i: b for k, b in boxes.items()}
        write_pair(root / 'images' / group, root / 'masks' / group, f'im{i}', ids)
        truth[f'{group}/im{i}.tif'] = boxes
    empty = np.zeros(SIZE[::-1], np.int64)
    write_pair(root / 'images' / 'c', root / 'masks' / 'c', 'empty', empty)
    truth['c/empty.tif'] = {}
    return root, truth


def run_masks(root, out, *options):
    return main(['masks', '--images', str(root / 'images'), '--masks', str(root / 'masks'),
                 '--out', str(out), '--no-progress', *map(str, options)])


@pytest.fixture(scope='module')
def converted(raw, tmp_path_factory):
    root, truth = raw
    before = tree_state(root)
    out = tmp_path_factory.mktemp('masks_out') / 'out'
    summary = run_masks(root, out, '--tile', 0, '--group-regex', r'^(\w)/',
                        '--val-regex', '^b$', '--test-regex', '^c$', '--test-regex', '^a$')
    assert tree_state(root) == before, 'the raw directories were modified'
    return root, truth, out, summary


def test_every_instance_becomes_its_box_and_centre(converted):
    _, truth, out, summary = converted
    found = {}
    for split in ('train', 'val', 'test'):
        images, anns, classes = load_coco(out, split)
        assert classes == ['nucleus']
        for ann in anns:
            found.setdefault(images[ann['image_id']]['source'], []).append(ann)
    assert summary['raw'] == dict(images=7, instances=sum(map(len, truth.values())),
                                  empty_masks=1, ids_in_pieces=0)
    for source, boxes in truth.items():
        anns = found.get(source, [])
        assert sorted(a['bbox'] for a in anns) == sorted(
            [float(v) for v in b] for b in boxes.values())
        for ann in anns:  # the centre point lies in the box
            x, y, w, h = ann['bbox']
            assert x <= ann['point'][0] < x + w and y <= ann['point'][1] < y + h


def test_held_out_folds_follow_the_patterns(converted):
    _, _, out, _ = converted
    sources = {}
    for fold in (0, 1):
        for split in ('train', 'val', 'test'):
            images, _, _ = load_coco(out, split, fold)
            sources[fold, split] = {im['source'].split('/')[0] for im in images.values()}
    assert sources[0, 'test'] == {'c'} and sources[0, 'val'] == {'b'}
    assert sources[0, 'train'] == {'a'}
    assert sources[1, 'test'] == {'a'} and sources[1, 'train'] == {'c'}


def test_empty_label_image_gives_an_image_without_cells(converted):
    _, _, out, _ = converted
    images, anns, _ = load_coco(out, 'test')
    empty = [i for i, im in images.items() if im['source'] == 'c/empty.tif']
    assert len(empty) == 1 and not [a for a in anns if a['image_id'] == empty[0]]


def test_sixteen_bit_images_are_stretched_to_eight_bits(converted):
    root, _, out, _ = converted
    pixels = read_intensity_image(root / 'images' / 'a' / 'im0.tif')
    assert pixels.dtype == np.uint8 and pixels.shape == (SIZE[1], SIZE[0], 3)
    assert pixels.min() == 0 and pixels.max() == 255


def test_stretch_all_puts_eight_bit_images_on_the_percentile_scale(tmp_path):
    ids = np.zeros((64, 64), np.int64)
    ids[10:30, 10:30] = 1
    for group in 'abc':  # 8-bit PNGs: background 62, the cell 250
        write_pair(tmp_path / 'images' / group, tmp_path / 'masks' / group, 'im', ids,
                   image_suffix='.png')
    seen = {}
    for stretch in ('deep', 'all'):
        out = tmp_path / stretch
        run_masks(tmp_path, out, '--group-regex', r'^(\w)/', '--stretch', stretch)
        image = next(iter(load_coco(out, 'train')[0].values()))
        seen[stretch] = set(np.unique(np.asarray(Image.open(out / 'images' /
                                                            image['file_name']))))
    assert seen == {'deep': {62, 250}, 'all': {0, 255}}
    colour = np.stack([np.full((4, 4), 10), np.full((4, 4), 20), np.full((4, 4), 30)], -1)
    colour[0, 0] = (40, 50, 60)
    stretched = to_uint8(colour.astype(np.uint8), (0, 100), 'all')  # one pair, all channels
    assert stretched[1, 1].tolist() == [0, 51, 102] and stretched[0, 0].tolist()[2] == 255
    assert to_uint8(colour.astype(np.uint8), (0, 100)).tolist() == colour.tolist()
    with pytest.raises(ValueError, match="stretch: expected one of deep, all, got 'some'"):
        to_uint8(colour.astype(np.uint8), (0, 100), 'some')


def test_instance_cut_by_a_tile_edge_belongs_to_the_tile_of_its_centre(tmp_path):
    ids = np.zeros((64, 64), np.int64)
    ids[10:20, 26:38] = 1  # straddles x = 32, centre x = 32.0: right tile
    ids[40:50, 24:34] = 2  # centre x = 29.0: left tile, clipped at x = 32
    for group in 'abc':
        write_pair(tmp_path / 'images' / group, tmp_path / 'masks' / group, 'im', ids)
    run_masks(tmp_path, tmp_path / 'out', '--tile', 32, '--group-regex', r'^(\w)/')
    boxes = {}
    for split in ('train', 'val', 'test'):
        images, anns, _ = load_coco(tmp_path / 'out', split)
        for ann in anns:
            image = images[ann['image_id']]
            boxes.setdefault(image['source'], []).append(
                ((image['x0'], image['y0']), ann['bbox']))
    for cells in boxes.values():
        assert sorted(cells) == [((0, 32), [24.0, 8.0, 8.0, 10.0]),
                                 ((32, 0), [0.0, 10.0, 6.0, 10.0])]


@pytest.mark.parametrize('mode, options', [('int32-tif', []), ('rgba-gb', ['--rgb-ids', 'GB'])])
def test_label_image_encodings(tmp_path, mode, options):
    rng = np.random.default_rng(1)
    ids, boxes = label_image(rng, n=5)
    ids[ids > 0] += 70000 if mode == 'int32-tif' else 500  # beyond 16 / 8 bits
    for group in 'abc':
        write_pair(tmp_path / 'images' / group, tmp_path / 'masks' / group, 'im', ids, mode)
    summary = run_masks(tmp_path, tmp_path / 'out', '--tile', 0, '--group-regex',
                        r'^(\w)/', *options)
    assert summary['raw']['instances'] == 3 * len(boxes)


def test_rgb_label_image_without_channel_order_is_an_error(tmp_path):
    ids, _ = label_image(np.random.default_rng(2))
    write_pair(tmp_path / 'images', tmp_path / 'masks', 'im', ids, 'rgba-gb')
    with pytest.raises(ValueError, match=r'im\.png: an RGBA label image.*--rgb-ids GB'):
        read_label_image(tmp_path / 'masks' / 'im.png')
    assert read_label_image(tmp_path / 'masks' / 'im.png', 'GB').max() == ids.max()


def test_mask_of_another_size_is_an_error_naming_both_files(tmp_path):
    ids, _ = label_image(np.random.default_rng(3))
    for group in 'abc':
        write_pair(tmp_path / 'images' / group, tmp_path / 'masks' / group, 'im', ids)
    Image.fromarray(ids[:-4].astype(np.uint16)).save(tmp_path / 'masks' / 'b' / 'im.png')
    with pytest.raises(ValueError, match=r'masks/b/im\.png is 96x76 but its image '
                                         r'.*images/b/im\.tif is 96x80'):
        run_masks(tmp_path, tmp_path / 'out', '--group-regex', r'^(\w)/')
    assert not (tmp_path / 'out').exists()  # nothing half-written


def test_image_without_label_image_and_ambiguous_stems_are_errors(tmp_path):
    ids, _ = label_image(np.random.default_rng(4))
    write_pair(tmp_path / 'images', tmp_path / 'masks', 'im', ids)
    write_pair(tmp_path / 'images', tmp_path / 'masks', 'im', ids, image_suffix='.png')
    with pytest.raises(ValueError, match='two images for im: .*--image-suffix'):
        run_masks(tmp_path, tmp_path / 'out')
    (tmp_path / 'masks' / 'im.png').unlink()
    with pytest.raises(ValueError, match=r'im\.tif: no label image; expected .*masks/im'):
        run_masks(tmp_path, tmp_path / 'out', '--image-suffix', '.tif')


def test_pieces_of_one_id_are_one_instance_and_touching_ids_two():
    ids = np.zeros((20, 20), np.int64)
    ids[0:4, 0:4] = 3
    ids[10:12, 10:14] = 3  # a second piece of id 3
    ids[5:8, 0:3] = 4
    ids[5:8, 3:6] = 5  # touches id 4
    labels, boxes, centres, areas = instances(ids)
    assert labels.tolist() == [3, 4, 5]
    assert boxes.tolist() == [[0, 0, 14, 12], [0, 5, 3, 3], [3, 5, 3, 3]]
    assert areas.tolist() == [24, 9, 9]
    assert centres[1].tolist() == [1.5, 6.5]


def test_pieces_are_eight_connected():
    ids = np.zeros((10, 10), np.int64)
    ids[0:2, 0:2] = 1
    ids[2:4, 2:4] = 1  # touches the first piece at a corner: one piece
    ids[6:8, 0:2] = 2
    ids[6:8, 5:7] = 2  # a gap: two pieces
    ids[9, 9] = 7
    labels, pieces = id_pieces(ids)
    assert labels.tolist() == [1, 2, 7] and pieces.tolist() == [1, 2, 1]


def blobs(value, *more):
    """(20, 20) ids: two separate squares of ``value``, then one square per ``more``."""
    ids = np.zeros((20, 20), np.int64)
    ids[1:4, 1:4] = value
    ids[10:14, 10:14] = value
    for k, v in enumerate(more):
        ids[16:19, 3 * k:3 * k + 2] = v
    return ids


@pytest.mark.parametrize('ids, in_pieces', [
    (blobs(255), '1 of its 1 id'),                  # binary 0/255 mask, two nuclei
    (blobs(1, 2, 2), '2 of its 2 id'),              # semantic: every class in pieces
    (blobs(1, 2, 2, 2, 3), '2 of its 3 id'),        # 6 pieces for 3 ids
])
def test_binary_or_semantic_mask_is_an_error_naming_the_file(tmp_path, ids, in_pieces):
    write_pair(tmp_path / 'images', tmp_path / 'masks', 'im', ids)
    with pytest.raises(ValueError, match=rf'masks/im\.png: {in_pieces}\(s\) are in several '
                                         r'separate pieces .*binary or semantic mask.*'
                                         'instance ids are expected.*connected components'):
        load_pair('im.tif', tmp_path / 'images' / 'im.tif', tmp_path / 'masks' / 'im.png',
                  'im')


def test_an_occasional_id_in_pieces_is_one_nucleus_and_counted(tmp_path):
    ids = blobs(1, 2, 3)  # id 1 in two pieces, ids 2 and 3 whole
    for group in 'abc':
        write_pair(tmp_path / 'images' / group, tmp_path / 'masks' / group, 'im', ids)
    summary = run_masks(tmp_path, tmp_path / 'out', '--tile', 0, '--group-regex', r'^(\w)/')
    assert summary['raw'] == dict(images=3, instances=9, empty_masks=0, ids_in_pieces=3)
    # two of three ids in two pieces (5 pieces for 3 ids) is still an instance image
    write_pair(tmp_path / 'images' / 'd', tmp_path / 'masks' / 'd', 'im', blobs(1, 2, 3, 3))
    summary = run_masks(tmp_path, tmp_path / 'out2', '--tile', 0, '--group-regex', r'^(\w)/')
    assert summary['raw']['ids_in_pieces'] == 5


def test_n_folds_three_tests_every_other_group_once(tmp_path):
    ids = np.zeros((16, 16), np.int64)
    ids[4:9, 4:9] = 1
    groups = 'abcdefgh'
    for group in groups:
        write_pair(tmp_path / 'images' / group, tmp_path / 'masks' / group, 'im', ids)
    run_masks(tmp_path, tmp_path / 'out', '--tile', 0, '--group-regex', r'^(\w)/',
              '--n-folds', 3)
    splits = json.loads((tmp_path / 'out' / 'splits.json').read_text())
    assert splits['n_folds'] == 3 and len(splits['val']) == 1
    tested = []
    for fold in range(3):
        tests = {im['source'][0] for im in load_coco(tmp_path / 'out', 'test', fold)[0].values()}
        vals = {im['source'][0] for im in load_coco(tmp_path / 'out', 'val', fold)[0].values()}
        assert tests and vals == set(splits['val'])
        tested += sorted(tests)
    assert sorted(tested) == sorted(set(groups) - set(splits['val']))


def test_mask_suffixes_match_in_any_case(tmp_path):
    ids, _ = label_image(np.random.default_rng(6))
    write_pair(tmp_path / 'images', tmp_path / 'masks', 'im', ids)
    (tmp_path / 'masks' / 'im.png').rename(tmp_path / 'masks' / 'im.PNG')
    assert find_pairs(tmp_path / 'images', tmp_path / 'masks') == [
        ('im.tif', tmp_path / 'images' / 'im.tif', tmp_path / 'masks' / 'im.PNG')]


def test_masks_folder_inside_images_is_not_searched_for_images(tmp_path):
    ids, _ = label_image(np.random.default_rng(7))
    write_pair(tmp_path / 'images', tmp_path / 'images' / 'masks', 'im', ids)
    assert [source for source, *_ in find_pairs(tmp_path / 'images',
                                                tmp_path / 'images' / 'masks')] == ['im.tif']
    # one folder for both: the file taken as the image is not a label image
    (tmp_path / 'images' / 'masks' / 'im.png').rename(tmp_path / 'images' / 'im.png')
    assert find_pairs(tmp_path / 'images', tmp_path / 'images', '.tif') == [
        ('im.tif', tmp_path / 'images' / 'im.tif', tmp_path / 'images' / 'im.png')]


def test_label_image_without_image_is_an_error_naming_it(tmp_path):
    ids, _ = label_image(np.random.default_rng(8))
    write_pair(tmp_path / 'images', tmp_path / 'masks', 'im', ids)
    write_pair(tmp_path / 'images', tmp_path / 'masks', 'other', ids, image_suffix='.png')
    (tmp_path / 'masks' / 'other.png').rename(tmp_path / 'masks' / 'other_mask.png')
    with pytest.raises(ValueError, match=r'other\.png: no label image'):
        find_pairs(tmp_path / 'images', tmp_path / 'masks')
    (tmp_path / 'images' / 'other.png').unlink()
    with pytest.raises(ValueError, match=r'^1 label image\(s\) without an image: '
                                         r'\S*masks/other_mask\.png; expected an image'):
        find_pairs(tmp_path / 'images', tmp_path / 'masks')
    # a label image whose image --image-suffix leaves out is not unpaired
    (tmp_path / 'masks' / 'other_mask.png').rename(tmp_path / 'masks' / 'other.png')
    write_pair(tmp_path / 'images', tmp_path / 'masks', 'other', ids, image_suffix='.png')
    assert len(find_pairs(tmp_path / 'images', tmp_path / 'masks', '.tif')) == 1


def test_tiff_stack_is_an_error(tmp_path):
    tifffile.imwrite(tmp_path / 'stack.tif', np.ones((3, 8, 8), np.uint16),
                     photometric='minisblack')
    for read in (read_label_image, read_intensity_image):
        with pytest.raises(ValueError, match=r'stack\.tif: a TIFF stack of 3 pages '
                                             r'\(axes QYX\); expected one 2-D image'):
            read(tmp_path / 'stack.tif')


def make_mnfinder(root):
    """A miniature of the unzipped wheel: three sets over the three split folders."""
    rng = np.random.default_rng(5)
    sets = {'training-data': ['2022-03-18_RPE1', '2022-10-14_U2OS', '2023-05-31_misc'],
            'validation-data': ['2022-05-26_RPE1', '2022-10-14_U2OS', '2023-05-31_misc'],
            'test-data': ['2022-10-14_U2OS', '2023-05-31_misc']}
    n = 0
    for split, names in sets.items():
        for name in names:
            ids, boxes = label_image(rng, size=(160, 144))
            folder = root / 'mnfinder' / split / name
            write_pair(folder / 'images', folder / 'nucleus_masks', '1', ids, 'rgba-gb',
                       image_suffix='.png')
            n += len(boxes)
    return n


def test_mnfinder_preset_holds_out_whole_sets(tmp_path):
    n = make_mnfinder(tmp_path / 'raw')
    out = tmp_path / 'out'
    summary = main(['mnfinder', '--src', str(tmp_path / 'raw'), '--out', str(out),
                    '--no-progress'])
    assert summary['raw']['instances'] == n and len(summary['folds']) == 3
    for fold, held_out in enumerate(['U2OS', 'misc', 'RPE1']):
        test = {im['source'] for im in load_coco(out, 'test', fold)[0].values()}
        train = {im['source'] for im in load_coco(out, 'train', fold)[0].values()}
        val = {im['source'] for im in load_coco(out, 'val', fold)[0].values()}
        assert test and all(held_out in s for s in test)
        assert not any(held_out in s for s in train | val)
        assert val and all(s.startswith('validation-data/') for s in val)
    tile = next(iter(load_coco(out, 'train', 0)[0].values()))
    assert (tile['width'], tile['height']) == (160, 144)  # smaller than a 256 px tile
    pixels = np.asarray(Image.open(out / 'images' / tile['file_name']))
    assert set(np.unique(pixels)) == {0, 255}  # 8-bit PNGs stretched too (--stretch all)
    options = json.loads((out / 'prepare.json').read_text())
    assert (options['dataset'], options['stretch']) == ('mnfinder', 'all')
    assert options['src'] == str(tmp_path / 'raw') and len(options['percentiles']) == 2


@pytest.mark.parametrize('low, high', [('99', '1'), ('5', '5'), ('1', '101'), ('-1', '50')])
def test_bad_percentiles_are_an_error_of_the_option(tmp_path, low, high):
    proc = run_script('data_prep/prepare.py', 'masks', '--images', tmp_path, '--masks',
                      tmp_path, '--out', tmp_path / 'out', '--percentiles', low, high)
    assert proc.returncode == 2 and 'Traceback' not in proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        'prepare.py masks: error: argument --percentiles: expected percentiles 0 <= LOW '
        f'< HIGH <= 100, got {float(low):g} {float(high):g}')
    with pytest.raises(ValueError, match='expected percentiles 0 <= LOW < HIGH <= 100'):
        to_uint8(np.arange(4, dtype=np.uint16), (float(low), float(high)))


def test_seed_and_folds_are_refused_where_the_patterns_fix_the_folds(raw, tmp_path):
    root, _ = raw
    folds = ('--val-regex', '^b$', '--test-regex', '^c$')
    for option in (('--n-folds', 2), ('--seed', 3)):
        with pytest.raises(ValueError, match=f'^{option[0]}: only for the random split; '
                                             'with --test-regex each pattern is one fold'):
            run_masks(root, tmp_path / 'out', '--group-regex', r'^(\w)/', *folds, *option)
    assert not (tmp_path / 'out').exists()
    run_masks(root, tmp_path / 'out', '--group-regex', r'^\w', '--seed', 3)
    splits = json.loads((tmp_path / 'out' / 'splits.json').read_text())
    assert splits['seed'] == 3 and sorted(splits['assignment']) == ['a', 'b', 'c']


def test_mnfinder_has_no_seed_or_fold_options(tmp_path):
    help_text = run_script('data_prep/prepare.py', 'mnfinder', '-h').stdout
    assert '--percentiles' in help_text
    assert '--seed' not in help_text and '--n-folds' not in help_text
    proc = run_script('data_prep/prepare.py', 'mnfinder', '--src', tmp_path, '--out',
                      tmp_path / 'out', '--n-folds', '5')
    assert proc.returncode == 2 and 'unrecognized arguments: --n-folds 5' in proc.stderr


# ------------------------------------------------------------------ resampling ----

def big_nuclei():
    """(320, 400) ids of three nuclei of 104, 120 and 110 px (a fluorescence set at a
    high magnification)."""
    ids = np.zeros((320, 400), np.int64)
    ids[8:112, 8:112] = 1
    ids[150:270, 200:320] = 2
    ids[20:130, 250:360] = 3
    return ids


@pytest.fixture(scope='module')
def big(tmp_path_factory):
    root = tmp_path_factory.mktemp('big_nuclei')
    for group in 'abc':
        write_pair(root / 'images' / group, root / 'masks' / group, 'im', big_nuclei())
    return root


def test_large_nuclei_are_reported_with_the_scale_to_use(big, tmp_path, capsys):
    summary = run_masks(big, tmp_path / 'out', '--tile', 0, '--group-regex', r'^(\w)/')
    assert summary['sizes'] == dict(
        nuclei=9, median=110.0, p5=104.0, p95=120.0, scale=1.0,
        warning="the nuclei's median box side is 110 px, outside the 8-64 px the models' "
                'anchors suit (16-256 px anchors for 12-40 px nuclei); convert with '
                '--scale 0.218 to bring it to about 24 px')
    printed = capsys.readouterr().out
    assert 'nucleus size (box side, px after resampling by 1): median 110, 5th-95th ' \
        'percentile 104-120, 9 nuclei' in printed
    assert 'warning: the nuclei\'s median box side is 110 px' in printed


@pytest.mark.parametrize('options', [('--scale', 0.25, '--mpp', 0.125),
                                     ('--target-mpp', 0.5, '--mpp', 0.125)])
def test_scale_resamples_images_boxes_and_records_the_resolution(big, tmp_path, options):
    out = tmp_path / 'out'
    summary = run_masks(big, out, '--tile', 0, '--group-regex', r'^(\w)/', *options)
    assert summary['sizes']['median'] == 27.5 and summary['sizes']['warning'] is None
    images, anns, _ = load_coco(out, 'test')
    (image, ) = images.values()
    assert (image['width'], image['height'], image['scale'], image['mpp']) == \
        (100, 80, 0.25, 0.5)
    assert sorted(ann['bbox'] for ann in anns) == [
        [2.0, 2.0, 26.0, 26.0], [50.0, 37.5, 30.0, 30.0], [62.5, 5.0, 27.5, 27.5]]
    pixels = read_png(out, image['file_name'])
    assert pixels.shape == (80, 100, 3)
    assert pixels[15, 15, 0] > 200 and pixels[70, 20, 0] < 50  # a nucleus, background
    options_written = json.loads((out / 'prepare.json').read_text())
    assert options_written['applied_scale'] == 0.25 and options_written['mpp'] == 0.125


def test_tiles_of_resampled_images_are_located_in_source_pixels(big, tmp_path):
    run_masks(big, tmp_path / 'out', '--tile', 64, '--group-regex', r'^(\w)/', '--scale',
              0.25)
    images, _, _ = load_coco(tmp_path / 'out', 'train')
    assert sorted((im['x0'], im['y0'], im['width'], im['height'])
                  for im in images.values()) == [
        (0, 0, 50, 40), (0, 160, 50, 40), (200, 0, 50, 40), (200, 160, 50, 40)]
    assert all(im['file_name'].endswith(f"/im_x{im['x0']}_y{im['y0']}.png")
               for im in images.values())
    assert all('mpp' not in im and im['scale'] == 0.25 for im in images.values())


def test_nucleus_size_chooses_the_scale_and_target_mpp_needs_mpp(big, tmp_path):
    summary = run_masks(big, tmp_path / 'out', '--tile', 0, '--group-regex', r'^(\w)/',
                        '--nucleus-size', 22)
    assert summary['sizes']['scale'] == pytest.approx(0.2)
    assert summary['sizes']['median'] == pytest.approx(22)
    images, _, _ = load_coco(tmp_path / 'out', 'test')
    assert [(im['width'], im['height']) for im in images.values()] == [(80, 64)]
    with pytest.raises(ValueError, match=r"im\.tif: --target-mpp 0\.5 needs the image's "
                                         r'micrometres per pixel.*--mpp M'):
        run_masks(big, tmp_path / 'other', '--group-regex', r'^(\w)/', '--target-mpp', 0.5)
    assert not (tmp_path / 'other').exists()


# --------------------------------------------------------------------- types ----

def typed_nuclei():
    """``(ids, types)`` of six nuclei over the types 1..3 (``a``, ``b``, ``c``)."""
    ids = np.zeros((40, 60), np.int64)
    types = np.zeros((40, 60), np.int64)
    ids[2:12, 2:12], types[2:12, 2:12] = 1, 2         # all b
    ids[2:12, 20:30] = 2
    types[2:12, 20:24], types[2:12, 24:30] = 1, 3     # 40 % a, 60 % c: c
    ids[20:30, 2:12] = 3
    types[20:30, 2:7], types[20:30, 7:12] = 1, 2      # a tie: the lower type, a
    ids[20:30, 20:30] = 4                             # no typed pixel: unclassified
    ids[20:30, 40:50] = 5
    types[20:30, 40:44], types[20:30, 44:47], types[20:30, 47:50] = 1, 2, 3  # a, mixed
    ids[32:38, 2:12], types[32:38, 2:4] = 6, 3        # 80 % background: c
    return ids, types


def write_types(root, ids, types, groups='abc'):
    for group in groups:
        write_pair(root / 'images' / group, root / 'masks' / group, 'im', ids)
        (root / 'types' / group).mkdir(parents=True, exist_ok=True)
        Image.fromarray(types.astype(np.uint8)).save(root / 'types' / group / 'im.png')


def test_instance_types_vote_by_pixels_without_the_background():
    ids, types = typed_nuclei()
    kinds, share = instance_types(ids, types, 3)
    assert kinds.tolist() == [2, 3, 1, 0, 1, 3]
    np.testing.assert_allclose(share, [1, 0.6, 0.5, 0, 0.4, 1])


def test_type_masks_classify_each_nucleus_and_ignore_the_untyped(tmp_path, capsys):
    ids, types = typed_nuclei()
    write_types(tmp_path, ids, types)
    summary = run_masks(tmp_path, tmp_path / 'out', '--tile', 0, '--group-regex', r'^(\w)/',
                        '--type-masks', tmp_path / 'types', '--class-names', 'a,b,c')
    assert summary['raw'] == dict(images=3, instances=18, empty_masks=0, ids_in_pieces=0,
                                  per_class=dict(a=6, b=3, c=6), unclassified=3, mixed=3)
    assert 'classes: a=6, b=3, c=6' in capsys.readouterr().out
    images, anns, classes = load_coco(tmp_path / 'out', 'test')
    assert classes == ['a', 'b', 'c']
    by_box = {tuple(ann['bbox'][:2]): (ann['category_id'], ann['iscrowd']) for ann in anns}
    assert by_box == {(2.0, 2.0): (2, 0), (20.0, 2.0): (3, 0), (2.0, 20.0): (1, 0),
                      (20.0, 20.0): (1, 1), (40.0, 20.0): (1, 0), (2.0, 32.0): (3, 0)}


def test_type_masks_errors_name_the_file_and_the_fix(tmp_path):
    ids, types = typed_nuclei()
    types[0, 59] = 4
    write_types(tmp_path, ids, types)
    options = ('--tile', 0, '--group-regex', r'^(\w)/', '--type-masks', tmp_path / 'types')
    with pytest.raises(ValueError, match=r'types/a/im\.png: type 4 at pixel \(x=59, y=0\); '
                                         r'expected 0\.\.3 \(0 = background'):
        run_masks(tmp_path, tmp_path / 'out', *options, '--class-names', 'a,b,c')
    with pytest.raises(ValueError, match=r'^--type-masks needs --class-names'):
        run_masks(tmp_path, tmp_path / 'out', *options)
    with pytest.raises(ValueError, match=r'^--class-names names the types of --type-masks'):
        run_masks(tmp_path, tmp_path / 'out', '--class-names', 'a,b')
    with pytest.raises(ValueError, match=r"^--class-names 'a,,b': expected distinct"):
        run_masks(tmp_path, tmp_path / 'out', *options, '--class-names', 'a,,b')
    (tmp_path / 'types' / 'b' / 'im.png').unlink()
    with pytest.raises(ValueError, match=r'images/b/im\.tif: no type image; expected '
                                         r'.*types/b/im\{\.png,\.tif,\.tiff\}'):
        run_masks(tmp_path, tmp_path / 'out', *options, '--class-names', 'a,b,c,d')
    assert not (tmp_path / 'out').exists()
