"""``prepare.py qupath``: QuPath GeoJSON / CSV of user images and slides -> COCO layout.

The raw fixture mixes the three QuPath styles, PNG images, a pyramidal tiled TIFF read as
a slide, regions (one with a hole, one ``Region*``), points, detections, cells with a
nucleus, a classified annotation polygon, a line, cells outside every region and an
image without an export. Widths differ from heights everywhere.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tifffile
from mmengine.config import Config

from data_prep import qupath
from data_prep.qupath import SlideRegions, open_reader, region_crops
from mmdet_pu.io.qupath import Region
from tests._data import REPO
from tests._qupath_fixtures import (feature, multipoint, noise_image, paint_cells, point,
                                    rect, write_features, write_png, write_pyramid_tiff)
from tests.data_prep.raw_fixtures import (config_datasets, load_coco, read_png, run_prepare,
                                          tree_state)

TUMOR, LYMPHO, STROMA = (200, 0, 0), (0, 0, 230), (0, 160, 0)
COLORS = dict(tumor=TUMOR, lymphocyte=LYMPHO, stroma=STROMA)
REGION_SOURCE = re.compile(r'(.*)_region\d+_x(\d+)_y(\d+)(\.\w+)$')


def cell(geometry, name, object_type='annotation', style='0.4', **kwargs):
    return feature(geometry, object_type, name, COLORS[name], style, **kwargs)


def make_raw(root):
    """Six annotated images (five slides A-E) and one without export.

    Returns ``(pixels by source, kept cells)``: the cells the converter must write, as
    ``{(source, class, x, y)}`` with the point or box centre in image pixels.
    """
    rng = np.random.default_rng(0)
    root = Path(root)
    pixels = {}

    def image(source, width, height, points):
        pixels[source] = paint_cells(noise_image(rng, height, width), points)
        if source.endswith('.tif'):
            write_pyramid_tiff(root / source, pixels[source], levels=3, tile=128)
        else:
            write_png(root / source, pixels[source])

    image('A/a1.png', 320, 240, [(50, 40), (100, 100), (220, 150), (250, 200), (300, 20)])
    write_features(root / 'A/a1.geojson', [
        feature(rect(20.5, 10, 150, 120)),                                  # region 1
        feature(rect(170, 100, 300, 230, hole=(200, 130, 240, 170)), name='Region*'),
        cell(point(50, 40), 'tumor'),
        cell(multipoint([(100, 100), (220, 150)]), 'tumor'),  # 2nd: in the hole
        cell(point(250, 200), 'lymphocyte'),
        cell(point(300, 20), 'tumor'),                        # outside every region
        cell(rect(30, 60, 44, 72), 'lymphocyte', 'detection', score=0.9),
        feature(dict(type='LineString', coordinates=[[0, 0], [9, 9]]))])
    image('A/a2.png', 200, 150, [])
    write_features(root / 'A/a2.geojson', [
        cell(rect(10, 10, 30, 28), 'lymphocyte', 'detection', '0.3'),
        cell(rect(50, 50, 90, 90), 'tumor', 'cell', '0.3', nucleus=rect(60, 62, 72, 76)),
        cell(rect(120, 30, 140, 52), 'tumor', style='0.3')], form='list')
    image('B/b1.tif', 600, 500, [(100, 100), (400, 300), (550, 450)])
    write_features(root / 'B/b1.geojson', [
        cell(multipoint([(100, 100), (400, 300)]), 'tumor', style='0.2'),
        feature(rect(50, 50, 450, 350), name='Region*', color=(0, 0, 180), style='0.2'),
        cell(point(550, 450), 'stroma', style='0.2')])
    image('C/c1.png', 180, 160, [(30, 30), (150, 120)])
    write_features(root / 'C/c1.geojson',
                   [cell(multipoint([(30, 30), (150, 120)]), 'stroma')], form='single')
    for source, xy in (('D/d1.png', (40, 50)), ('E/e1.png', (70, 60))):
        image(source, 150, 140, [xy])
        write_features(root / source.replace('.png', '.geojson'), [cell(point(*xy), 'tumor')])
    write_png(root / 'extra.png', noise_image(rng, 50, 60))
    kept = {('A/a1.png', 'tumor', 50, 40), ('A/a1.png', 'tumor', 100, 100),
            ('A/a1.png', 'lymphocyte', 37, 66), ('A/a1.png', 'tumor', 220, 150),
            ('A/a1.png', 'lymphocyte', 250, 200),
            ('A/a2.png', 'lymphocyte', 20, 19), ('A/a2.png', 'tumor', 66, 69),
            ('A/a2.png', 'tumor', 130, 41),
            ('B/b1.tif', 'tumor', 100, 100), ('B/b1.tif', 'tumor', 400, 300),
            ('C/c1.png', 'stroma', 30, 30), ('C/c1.png', 'stroma', 150, 120),
            ('D/d1.png', 'tumor', 40, 50), ('E/e1.png', 'tumor', 70, 60)}
    return pixels, kept


def crop_of(source):
    """``(raw image source, x, y)`` of a written source (a region crop or an image)."""
    match = REGION_SOURCE.fullmatch(source)
    if match is None:
        return source, 0, 0
    return match.group(1) + match.group(4), int(match.group(2)), int(match.group(3))


def written_cells(out, classes, splits=('train', 'val', 'test')):
    """``{(raw source, class, x, y)}`` of every written annotation, in image pixels."""
    cells = set()
    for split in splits:
        images, anns, _ = load_coco(out, split)
        for ann in anns:
            image = images[ann['image_id']]
            source, x, y = crop_of(image['source'])
            if 'point' in ann:
                px, py = ann['point']
            else:
                bx, by, bw, bh = ann['bbox']
                px, py = bx + bw / 2, by + bh / 2
            cells.add((source, classes[ann['category_id'] - 1],
                       round(x + image['x0'] + px, 3), round(y + image['y0'] + py, 3)))
    return cells


@pytest.fixture(scope='module')
def raw(tmp_path_factory):
    root = tmp_path_factory.mktemp('qupath_raw')
    return (root, *make_raw(root))


@pytest.fixture(scope='module')
def converted(raw, tmp_path_factory):
    root, pixels, kept = raw
    before = tree_state(root)
    out = tmp_path_factory.mktemp('qupath_out') / 'out'
    summary = run_prepare('qupath', root, out, '--box-size', 16)
    assert tree_state(root) == before, 'the raw directory was modified'
    return out, summary, pixels, kept


def test_cells_classes_and_colours(converted):
    out, summary, _, kept = converted
    classes = ['lymphocyte', 'stroma', 'tumor']  # sorted names
    assert written_cells(out, classes) == kept
    coco = json.loads((out / 'annotations/fold0/train.json').read_text())
    assert coco['categories'] == [dict(id=i + 1, name=name, color=list(COLORS[name]))
                                  for i, name in enumerate(classes)]
    assert summary['colors'] == {name: list(COLORS[name]) for name in classes}
    raw = summary['raw']
    assert raw['per_class'] == dict(lymphocyte=3, stroma=2, tumor=9)
    assert {k: raw[k] for k in ('images', 'groups', 'regions', 'crops', 'cells_read',
                                'other_class', 'unclassified', 'outside_regions',
                                'dropped_outside_regions', 'images_without_geojson',
                                'ignored_features')} == dict(
        images=6, groups=6, regions=3, crops=7, cells_read=16, other_class=0,
        unclassified=0, outside_regions=3, dropped_outside_regions=2,
        images_without_geojson=1, ignored_features=1)


def test_only_regions_are_written_as_crops(converted):
    out, _, pixels, _ = converted
    entries = []
    for split in ('train', 'val', 'test', 'test_whole'):
        entries += load_coco(out, split)[0].values()
    sources = {image['source'] for image in entries}
    assert sources == {'A/a1_region1_x20_y10.png', 'A/a1_region2_x170_y100.png',
                       'A/a2.png', 'B/b1_region1_x50_y50.tif', 'C/c1.png', 'D/d1.png',
                       'E/e1.png'}
    crop_sizes = {'A/a1_region1_x20_y10.png': (130, 110),
                  'A/a1_region2_x170_y100.png': (130, 130), 'B/b1_region1_x50_y50.tif':
                  (400, 300)}
    for image in entries:
        source, x, y = crop_of(image['source'])
        width, height = crop_sizes.get(image['source'], pixels[source].shape[1::-1])
        x0, y0, w, h = image['x0'], image['y0'], image['width'], image['height']
        assert x0 + w <= width and y0 + h <= height  # inside the crop
        expected = pixels[source][y + y0:y + y0 + h, x + x0:x + x0 + w]
        assert np.array_equal(read_png(out, image['file_name']), expected), image
    b1_tiles = {(im['x0'], im['y0']) for im in entries
                if im['source'].startswith('B/') and 'tiles' not in im}
    assert b1_tiles == {(0, 0), (144, 0), (0, 44), (144, 44)}  # 256 px grid of the crop


def test_points_written_where_every_cell_of_a_crop_is_a_point(converted):
    out = converted[0]
    has_point = {}
    for split in ('train', 'val', 'test'):
        images, anns, _ = load_coco(out, split)
        for ann in anns:
            has_point.setdefault(images[ann['image_id']]['source'], set()).add(
                'point' in ann)
    assert has_point['A/a1_region1_x20_y10.png'] == {False}  # a detection among points
    assert has_point['A/a1_region2_x170_y100.png'] == {True}
    assert has_point['A/a2.png'] == {False}
    assert has_point['B/b1_region1_x50_y50.tif'] == {True}


def test_classes_select_order_and_drop(raw, tmp_path):
    root, _, kept = raw
    out = tmp_path / 'out'
    summary = run_prepare('qupath', root, out, '--box-size', 16,
                          '--classes', 'tumor,lymphocyte')
    classes = ['tumor', 'lymphocyte']
    assert load_coco(out, 'train')[2] == classes
    assert written_cells(out, classes) == {c for c in kept if c[1] != 'stroma'}
    assert summary['raw']['other_class'] == 3  # c1's two and b1's (outside its region)


def test_group_regex_keeps_a_slide_in_one_split(raw, tmp_path):
    root = raw[0]
    out = tmp_path / 'out'
    run_prepare('qupath', root, out, '--group-regex', r'^([A-Z])/')
    splits = json.loads((out / 'splits.json').read_text())
    assert sorted(splits['assignment']) == ['A', 'B', 'C', 'D', 'E']
    split_of = {}
    for split in ('train', 'val', 'test'):
        for image in load_coco(out, split)[0].values():
            split_of.setdefault(crop_of(image['source'])[0][0], set()).add(split)
    assert split_of['A'] == set(splits['assignment']['A'])
    assert all(len(s) == 1 for s in split_of.values())


def test_csv_points_and_the_custom_dataset_config(raw, tmp_path):
    root, pixels, _ = raw
    csv_path = tmp_path / 'cells.csv'
    rows = [('A/a2.png', 12.5, 20), ('C/c1.png', 30, 30), ('C/c1.png', 150, 120),
            ('D/d1.png', 40, 50), ('E/e1.png', 70, 60), ('B/b1.tif', 100, 100)]
    csv_path.write_text('image,x,y,note\n' + ''.join(f'{s},{x},{y},n\n' for s, x, y in rows)
                        + '\n')
    out = tmp_path / 'out'
    summary = run_prepare('qupath', root, out, '--csv', csv_path, '--box-size', 10)
    assert written_cells(out, ['cell']) == {(s, 'cell', x, y) for s, x, y in rows}
    assert summary['raw']['unclassified'] == 6 and summary['raw']['regions'] == 0
    images = load_coco(out, 'train')[0].values()
    assert all(crop_of(im['source'])[1:] == (0, 0) for im in images)  # whole images
    cfg, datasets = config_datasets('custom', out)
    assert cfg.metainfo['classes'] == ('cell', )
    assert sum(len(datasets[s]) for s in ('train', 'val')) > 0
    sample = datasets['train'][0]
    assert sample['data_samples'].gt_instances.labels.tolist() == \
        [0] * len(sample['data_samples'].gt_instances)


def test_documented_child_configs_build(tmp_path):
    """The child configs of docs/datasets.md compose with the user's classes."""
    custom = REPO / 'configs' / 'custom' / 'custom_pu.py'
    binary = tmp_path / 'mitosis_pu.py'
    binary.write_text(f"_base_ = '{custom}'\n" + CHILD_BINARY)
    cfg = Config.fromfile(str(binary))
    for loader in ('train', 'val', 'test'):
        assert cfg[f'{loader}_dataloader'].dataset.metainfo.classes == ('mitosis', )
    assert cfg.model.roi_head.bbox_head.num_classes == 1
    multi = tmp_path / 'my_mpu.py'
    multi.write_text(f"_base_ = '{custom}'\n" + CHILD_MULTI)
    cfg = Config.fromfile(str(multi))
    assert cfg.model.roi_head.bbox_head.num_classes == 2
    assert cfg.model.roi_head.bbox_head.loss_cls.type == 'MultiPULoss'
    assert len(cfg.model.roi_head.bbox_head.loss_cls.priors) == 2
    for loader in ('train', 'val', 'test'):
        dataset = cfg[f'{loader}_dataloader'].dataset
        assert dataset.metainfo.classes == ('tumor', 'lymphocyte')
        assert dataset.get('deletion') is None


CHILD_BINARY = """\
metainfo = dict(classes=('mitosis', ), palette=[(220, 20, 60)])
train_dataloader = dict(dataset=dict(metainfo=metainfo))
val_dataloader = dict(dataset=dict(metainfo=metainfo))
test_dataloader = dict(dataset=dict(metainfo=metainfo))
"""
CHILD_MULTI = """\
metainfo = dict(classes=('tumor', 'lymphocyte'), palette=[(200, 0, 0), (0, 0, 230)])
model = dict(
    rpn_head=dict(loss_cls=dict(prior=0.3)),  # the sum of the class priors
    roi_head=dict(bbox_head=dict(num_classes=2, loss_cls=dict(
        _delete_=True, type='MultiPULoss', priors=[0.2, 0.1]))))  # one per class
train_dataloader = dict(dataset=dict(metainfo=metainfo))
val_dataloader = dict(dataset=dict(metainfo=metainfo))
test_dataloader = dict(dataset=dict(metainfo=metainfo))
"""


# -------------------------------------------------------------------- building blocks

def test_region_crops_clip_round_and_merge():
    def box(x0, y0, x1, y1):
        return Region(((x0, y0), (x1, y0), (x1, y1), (x0, y1)))
    regions = [box(10.4, 5.6, 50.2, 40), box(45, 30, 80, 60),  # overlap: merged
               box(50, 80, 90, 95),                               # touches none
               box(-20, 90, 10, 130), box(200, 0, 300, 20)]       # clipped
    assert region_crops(regions, width=250, height=100) == [  # row by row
        (200, 0, 50, 20), (10, 5, 70, 55), (50, 80, 40, 15), (0, 90, 10, 10)]
    chain = [box(0, 0, 10, 10), box(30, 0, 40, 10), box(5, 5, 35, 8)]  # merged via the 3rd
    assert region_crops(chain, 100, 100) == [(0, 0, 40, 10)]


def test_slides_are_read_by_the_whole_slide_reader_opened_lazily(tmp_path):
    image = noise_image(np.random.default_rng(1), 300, 420)
    pyramid = write_pyramid_tiff(tmp_path / 'p.tif', image, levels=2, tile=128)
    strips = tmp_path / 's.tif'
    tifffile.imwrite(strips, image, photometric='rgb')  # not tiled: OpenSlide refuses it
    for path, backend in ((pyramid, 'openslide'), (strips, 'tifffile')):
        reader, size = open_reader(path)
        assert isinstance(reader, SlideRegions) and size == (420, 300)
        assert reader._slide is None  # nothing held open until the writer reads
        assert np.array_equal(reader.read_region(100, 37, 250, 200), image[37:237, 100:350])
        assert reader._slide.backend == backend
        with pytest.raises(ValueError, match=r'is not inside level 0 \(420x300\)'):
            reader.read_region(400, 0, 30, 10)
        reader.close()
        assert reader._slide is None
        assert np.array_equal(reader.read_region(5, 6, 30, 20), image[6:26, 5:35])
        reader.close()


def test_command_line_parses_and_the_readers_need_no_model_code():
    """``prepare.py qupath`` builds its options; the readers it uses (``mmdet_pu.io``)
    import neither torch nor mmdet themselves (only the package's registration does)."""
    code = ("from data_prep.prepare import build_parser; "
            "args = build_parser(['qupath']).parse_args(['qupath', '--src', 'a', '--out', "
            "'b']); assert args.box_size == 32, args")
    subprocess.run([sys.executable, '-c', code], cwd=REPO, check=True, timeout=60,
                   env=dict(os.environ, PYTHONPATH=str(REPO)))
    heavy = re.compile(r'^\s*(from|import)\s+(torch|mmdet|mmengine|mmcv)\b', re.MULTILINE)
    offenders = [p.name for p in (REPO / 'mmdet_pu' / 'io').glob('*.py')
                 if heavy.search(p.read_text())]
    assert not offenders


# ------------------------------------------------------------------------ bad input --

def small_raw(root, features, size=(120, 90)):
    root = Path(root)
    write_png(root / 'x.png', noise_image(np.random.default_rng(2), size[1], size[0]))
    for name in ('y', 'z'):
        write_png(root / f'{name}.png', noise_image(np.random.default_rng(3), 60, 70))
        write_features(root / f'{name}.geojson', [cell(point(10, 10), 'tumor')])
    write_features(root / 'x.geojson', features)
    return root


@pytest.mark.parametrize('features, options, message', [
    ([cell(point(130, 10), 'tumor')], (),
     r'^x\.geojson feature 0: point \(x=130, y=10\) is outside the 120x90 image'),
    ([cell(point(5, 5), 'lymphocyte'), feature(point(6, 6))], (),
     r"^x\.geojson feature 1: unclassified cell, but there are 2 classes \['lymphocyte', "
     r"'tumor'\]; classify it in QuPath or pass --classes with one class"),
    ([cell(point(5, 5), 'tumor')], ('--classes', 'tumor,mitosis'),
     r"^--classes: no cell has class\(es\) \['mitosis'\]; the cells' classes are "
     r"\['tumor'\]"),
    ([cell(point(5, 5), 'tumor')], ('--classes', 'tumor,,a'), r'^--classes .*distinct'),
    ([cell(point(5, 5), 'tumor')], ('--group-regex', 'x'),
     r"^--group-regex 'x': needs a group"),
    ([cell(point(5, 5), 'tumor')], ('--group-regex', '(q)'),
     r"^--group-regex '\(q\)' does not match the image path 'x\.png'"),
    ([feature(dict(type='Polygon', coordinates=[[[0, 0], ['a', 1], [3, 3]]]))], (),
     r'^x\.geojson feature 0: geometry\.coordinates\[0\]\[1\]: expected a position'),
])
def test_bad_input_writes_nothing(tmp_path, features, options, message):
    root = small_raw(tmp_path / 'raw', features)
    out = tmp_path / 'out'
    with pytest.raises(ValueError, match=message):
        run_prepare('qupath', root, out, *options)
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ['raw']  # no temporary left either


def test_bad_files_write_nothing(tmp_path, monkeypatch):
    root = small_raw(tmp_path / 'raw', [cell(point(5, 5), 'tumor')])
    out = tmp_path / 'out'
    (root / 'x.geojson').write_text('{"type": "FeatureCollection", "features": [\n,]}')
    with pytest.raises(ValueError, match=r'^x\.geojson line 2 column 1: not valid JSON'):
        run_prepare('qupath', root, out)
    write_features(root / 'x.geojson', [feature(rect(0, 0, 100, 80)),
                                        cell(point(5, 5), 'tumor')])
    monkeypatch.setattr(qupath, 'MAX_WHOLE_PIXELS', 70 * 60)
    with pytest.raises(ValueError, match=r'^x\.geojson: region crop 1 at x=0, y=0 is '
                                         r'100x80 pixels, more than 4200'):
        run_prepare('qupath', root, out)
    monkeypatch.undo()
    write_features(root / 'sub' / 'orphan.geojson', [])
    with pytest.raises(ValueError, match=r'^sub/orphan\.geojson: no image next to it'):
        run_prepare('qupath', root, out)
    assert not out.exists()


@pytest.mark.parametrize('content, message', [
    ('image,x\nx.png,1\n', r"cells\.csv line 1: missing column\(s\) \['y'\]"),
    ('image,x,y\nx.png,1,2\nx.png,a,2\n', r'cells\.csv line 3: expected numbers in x, y'),
    ('image,x,y\nx.png,1,2\nnope.png,1,2\n',
     r"cells\.csv line 3: image 'nope\.png' is not an image file below --src"),
    ('image,x,y\nx.png,1,90\n',
     r'cells\.csv line 2: point \(x=1, y=90\) is outside the 120x90 image x\.png'),
    ('image,x,y\nx.png,1,2,3\n', r'cells\.csv line 2: expected 3 fields'),
])
def test_bad_csv_writes_nothing(tmp_path, content, message):
    root = small_raw(tmp_path / 'raw', [])
    csv_path = tmp_path / 'cells.csv'
    csv_path.write_text(content)
    out = tmp_path / 'out'
    with pytest.raises(ValueError, match=message):
        run_prepare('qupath', root, out, '--csv', csv_path)
    assert not out.exists()
