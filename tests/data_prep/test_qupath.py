"""``prepare.py qupath``: QuPath exports / CSV of user images and slides -> COCO layout.

The raw fixture mixes the three QuPath styles, PNG images, a pyramidal tiled TIFF read as
a slide, regions (one with a hole, one ``Region*``), points, detections, cells with a
nucleus, a classified annotation polygon, a line, cells outside every region and an
image without an export. Widths differ from heights everywhere. ``test_every_form_*``
imports one hand-written export of each form QuPath writes (tests/fixtures/qupath/).
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
import tifffile
from mmengine.config import Config

from data_prep import qupath, qupath_crops
from data_prep.points import PointRow, read_point_table
from data_prep.qupath_crops import region_crops
from cellio import sources
from cellio.images import LazyImageReader
from cellio.qupath import QuPathObject, Region, match_exports, qupath_stem, write_geojson
from cellio.slides import OpenSlideReader
from cellio.sources import open_image_source
from tests._cli import run_script
from tests._data import REPO
from tests._qupath_fixtures import (FORM_SIZE, FORMS, feature, gzip_export, multipoint,
                                    noise_image, paint_cells, point, rect, write_features,
                                    write_png, write_pyramid_tiff, zip_export)
from tests.data_prep.raw_fixtures import (config_datasets, load_coco, read_png, run_prepare,
                                          tree_state)

TUMOR, LYMPHO, STROMA = (200, 0, 0), (0, 0, 230), (0, 160, 0)
COLORS = dict(tumor=TUMOR, lymphocyte=LYMPHO, stroma=STROMA)
SPLITS = ('train', 'val', 'test')
UNCLASSIFIED = 'skipped: unclassified (other cells are classified; --unclassified-class ' \
    'NAME keeps them)'


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


def entries(out, splits=SPLITS + ('test_whole', )):
    """Every written image entry."""
    images = []
    for split in splits:
        images += load_coco(out, split)[0].values()
    return images


def written_cells(out, classes, splits=SPLITS):
    """``{(source, class, x, y)}`` of every written annotation, located in its raw image
    by the entry's ``source`` and ``x0``, ``y0`` alone."""
    cells = set()
    for split in splits:
        images, anns, _ = load_coco(out, split)
        for ann in anns:
            image = images[ann['image_id']]
            if 'point' in ann:
                px, py = ann['point']
            else:
                bx, by, bw, bh = ann['bbox']
                px, py = bx + bw / 2, by + bh / 2
            cells.add((image['source'], classes[ann['category_id'] - 1],
                       round(image['x0'] + px, 3), round(image['y0'] + py, 3)))
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
    assert {k: v for k, v in raw.items() if k != 'per_class'} == dict(
        images=6, groups=6, regions=3, derived_regions=0, ignored_areas=0, crops=7,
        cells_read=16, cells_written=14, other_class=0, unclassified=0, inside_ignored=0,
        outside_regions=1, dropped_outside_regions=2, skipped_features=1,
        images_without_export=1, unused_files=0)


def test_regions_are_written_with_the_raw_source_and_its_offsets(converted):
    """Provenance: every entry's ``source`` is the raw image and ``x0``, ``y0`` its
    level-0 position there, whether the image is whole or a region crop."""
    out, _, pixels, _ = converted
    images = entries(out)
    assert {image['source'] for image in images} == {
        'A/a1.png', 'A/a2.png', 'B/b1.tif', 'C/c1.png', 'D/d1.png', 'E/e1.png'}
    for image in images:
        x0, y0, w, h = image['x0'], image['y0'], image['width'], image['height']
        raw = pixels[image['source']]
        assert x0 + w <= raw.shape[1] and y0 + h <= raw.shape[0]
        assert np.array_equal(read_png(out, image['file_name']), raw[y0:y0 + h, x0:x0 + w])
        assert 'mpp' not in image  # neither PNGs nor these TIFFs give a resolution
    crops = {(im['x0'], im['y0'], im['width'], im['height']) for im in images
             if 'tiles' in im or im['file_name'].startswith('whole/')}
    assert {(20, 10, 130, 110), (170, 100, 130, 130), (50, 50, 400, 300)} <= crops | {
        (im['x0'], im['y0'], 400, 300) for im in images if im['source'] == 'B/b1.tif'}
    b1_tiles = {(im['x0'], im['y0']) for im in images
                if im['source'] == 'B/b1.tif' and 'tiles' not in im}
    # the 256 px grid of the 400x300 crop: 2 x 2 tiles of 200 x 150 px
    assert b1_tiles == {(50, 50), (250, 50), (50, 200), (250, 200)}
    names = {im['file_name'] for im in images if im['source'] == 'A/a1.png'}
    assert all(re.fullmatch(r'(tiles|whole)/A/a1_x\d+_y\d+\.png', n) for n in names)


def test_points_written_where_every_cell_of_a_crop_is_a_point(converted):
    out = converted[0]
    has_point = {}
    for split in SPLITS:
        images, anns, _ = load_coco(out, split)
        for ann in anns:
            image = images[ann['image_id']]
            crop = (image['source'], image['x0'] >= 170 if image['source'] == 'A/a1.png'
                    else None)
            has_point.setdefault(crop, set()).add('point' in ann)
    assert has_point[('A/a1.png', False)] == {False}  # a detection among points
    assert has_point[('A/a1.png', True)] == {True}
    assert has_point[('A/a2.png', None)] == {False}
    assert has_point[('B/b1.tif', None)] == {True}


def test_report_accounts_for_every_feature(converted):
    out, summary, _, _ = converted
    report = json.loads((out / qupath.REPORT_FILE).read_text())
    assert report == json.loads(json.dumps(summary['report']))
    files = {entry['file']: entry for entry in report['files']}
    a1 = files['A/a1.geojson']
    assert a1['features'] == dict(annotation=7, detection=1)
    assert a1['objects'] == dict(
        annotation={'cell: lymphocyte': 1, 'cell: tumor': 3, 'region': 2,
                    'skipped: line (ruler)': 1, 'skipped: outside every region': 1},
        detection={'cell: lymphocyte': 1})
    assert (a1['image'], a1['regions'], a1['crops'], a1['outside_regions']) == \
        ('A/a1.png', 2, 2, 1)
    assert a1['frame'] == [0, 0, 320, 240] and a1['mpp'] is None
    assert files['B/b1.geojson']['objects'] == dict(annotation={
        'cell: tumor': 2, 'region': 1, 'skipped: outside every region': 1})
    assert report['totals']['annotation']['cell: tumor'] == 8
    assert report['images_without_export'] == 1


def test_classes_select_order_and_drop(raw, tmp_path):
    root, _, kept = raw
    out = tmp_path / 'out'
    summary = run_prepare('qupath', root, out, '--box-size', 16,
                          '--classes', 'tumor,lymphocyte')
    classes = ['tumor', 'lymphocyte']
    assert load_coco(out, 'train')[2] == classes
    assert written_cells(out, classes) == {c for c in kept if c[1] != 'stroma'}
    assert summary['raw']['other_class'] == 3  # c1's two and b1's (outside its region)


@pytest.mark.parametrize('regex', [r'^([A-Z])/', r'^[A-Z]'])  # first group, whole match
def test_group_regex_keeps_a_slide_in_one_split(raw, tmp_path, regex):
    root = raw[0]
    out = tmp_path / 'out'
    run_prepare('qupath', root, out, '--group-regex', regex)
    splits = json.loads((out / 'splits.json').read_text())
    assert sorted(splits['assignment']) == ['A', 'B', 'C', 'D', 'E']
    split_of = {}
    for split in SPLITS:
        for image in load_coco(out, split)[0].values():
            split_of.setdefault(image['source'][0], set()).add(split)
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
    assert summary['raw']['regions'] == 0 and summary['raw']['unclassified'] == 0
    assert summary['report']['totals'] == {'csv row': {'cell: cell': 6}}
    images = load_coco(out, 'train')[0].values()
    assert all(not re.search(r'_x\d+_y\d+\.png$', im['file_name']) for im in images
               if im['file_name'].startswith('whole/'))  # whole images keep their names
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


# ------------------------------------------------------------ every form QuPath writes

#: What becomes of each object of each form (tests/fixtures/qupath/), by object type.
FORM_OUTCOMES = {
    'qupath05.geojson': dict(annotation={'region': 1, 'cell: Tumor': 1},
                             detection={'cell: Lymphocyte': 1}, cell={'cell: Tumor': 1}),
    'qupath03.geojson': dict(annotation={'region': 1, 'cell: Tumor': 1},
                             detection={'cell: Stroma': 1},
                             tmaCore={'skipped: TMA core': 1}),
    'qupath02.geojson': dict(annotation={'region': 1}, cell={'cell: Tumor: Positive': 1},
                             detection={'cell: Stroma: Positive': 1}),
    'type_alias.geojson': dict(detection={'cell: Tumor': 1}, annotation={'cell: Tumor': 1}),
    'hierarchy.geojson': dict(root={'skipped: root object': 1},
                              tmaCore={'skipped: TMA core': 1}, tile={'skipped: tile': 1},
                              annotation={'region': 1},
                              detection={'cell: Tumor': 1,
                                         'skipped: outside every region': 1}),
    'classifications.geojson': dict(annotation={
        'cell: Tumor: Positive': 1, UNCLASSIFIED: 2, 'cell: Tumor: Negative': 1,
        'cell: Immune cells': 1, 'cell: Necrosis': 1}),
    'geometries.geojson': dict(annotation={
        'cell: Lymphocyte': 3, 'skipped: line (ruler)': 2, 'region': 2, 'cell: Tumor': 3,
        'skipped: empty geometry': 1}, detection={'cell: Tumor': 1}),
    'ignored.geojson': dict(annotation={
        'region': 1, 'ignored area': 1, 'skipped: inside an ignored area': 1,
        'cell: Tumor': 1, UNCLASSIFIED: 2, "skipped: ignored class 'Ignore*'": 1,
        'skipped: outside every region': 1},
        detection={"skipped: ignored class 'Artefact*'": 1}),
    'planes.geojson': dict(annotation={
        'cell: Tumor': 1, 'skipped: on plane z=1,t=0 (not the chosen z=0,t=0)': 2}),
    'bare_list.json': dict(annotation={'cell: Tumor': 1, 'region': 1}),
    'single_feature.geojson': dict(annotation={'cell: Tumor': 2}),
    'bare_geometry.geojson': dict(annotation={UNCLASSIFIED: 2}),
    'compressed.geojson.gz': dict(annotation={'cell: Tumor': 1}),
    'archived.zip': dict(annotation={'region': 1, 'cell: Lymphocyte': 1}),
    'stem_rule.geojson': dict(annotation={'cell: Tumor': 1}),
}
#: Points beyond the first of each multi-point (a multi-point counts one object a point).
EXTRA_POINTS = {'geometries.geojson': 3, 'ignored.geojson': 1, 'single_feature.geojson': 1,
                'bare_geometry.geojson': 1}


def make_forms(root):
    """One image per form, named as QuPath names the export's image; returns its pixels."""
    rng = np.random.default_rng(5)
    width, height = FORM_SIZE
    pixels = {}
    for path in sorted(FORMS.iterdir()):
        stem = path.name.split('.')[0]
        pixels[stem] = noise_image(rng, height, width)
        if stem == 'stem_rule':  # x.ome.tif -> x.geojson
            write_pyramid_tiff(root / 'stem_rule.ome.tif', pixels[stem], levels=2, tile=128)
        else:
            write_png(root / f'{stem}.png', pixels[stem])
        if stem == 'compressed':
            gzip_export(path, root / 'compressed.geojson.gz')
        elif stem == 'archived':
            zip_export(path, root / 'archived.zip')
        else:
            shutil.copy(path, root / path.name)
    (root / 'project' / 'data' / '1').mkdir(parents=True)
    (root / 'project' / 'data' / '1' / 'server.json').write_text('{}')  # not an export
    return pixels


def test_every_form_imports_and_the_report_accounts_for_every_feature(tmp_path):
    """A folder with one export of each form QuPath 0.2-0.6 writes imports with exit
    status 0; the report (printed and ``qupath_report.json``) gives every object's fate."""
    src, out = tmp_path / 'src', tmp_path / 'out'
    src.mkdir()
    pixels = make_forms(src)
    result = run_script('data_prep/prepare.py', 'qupath', '--src', src, '--out', out,
                        '--plane', '0,0', '--box-size', '8', '--no-progress')
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((out / qupath.REPORT_FILE).read_text())
    files = {entry['file']: entry for entry in report['files']}
    assert sorted(files) == sorted(FORM_OUTCOMES)
    for name, expected in FORM_OUTCOMES.items():
        entry = files[name]
        assert entry['objects'] == {k: dict(sorted(v.items())) for k, v in expected.items()}, \
            name
        objects = sum(n for counts in entry['objects'].values() for n in counts.values())
        assert objects == sum(entry['features'].values()) + EXTRA_POINTS.get(name, 0), name
        assert f'{name} -> ' in result.stdout
    assert files['stem_rule.geojson']['image'] == 'stem_rule.ome.tif'
    assert files['type_alias.geojson']['notes'] == [
        "type_alias.geojson feature 1: unknown object type 'measurementPoint' read as an "
        'annotation, as QuPath does']
    assert report['unused_files'] == ['project/data/1/server.json']
    assert report['classes'] == ['Immune cells', 'Lymphocyte', 'Necrosis', 'Stroma',
                                 'Stroma: Positive', 'Tumor', 'Tumor: Negative',
                                 'Tumor: Positive']
    assert report['colors']['Necrosis'] == [50, 50, 50]
    # ignored areas are painted white (glass) in every image written, nothing else is
    for image in entries(out):
        stem = image['source'].split('.')[0]
        x0, y0, w, h = image['x0'], image['y0'], image['width'], image['height']
        expected = pixels[stem][y0:y0 + h, x0:x0 + w].copy()
        if stem == 'ignored':
            expected[max(0, 40 - y0):max(0, 140 - y0), max(0, 40 - x0):max(0, 140 - x0)] = 255
        assert np.array_equal(read_png(out, image['file_name']), expected), image


@pytest.mark.parametrize('name, image, matches', [
    ('x.geojson', 'x.ome.tif', True), ('x.ome.geojson', 'x.ome.tif', True),
    ('x.geojson.gz', 'x.png', True), ('x.JSON', 'x.png', True), ('x.zip', 'x.svs', True),
    ('a.b.geojson', 'a.b.png', True), ('x.svs.geojson', 'x.svs', True),
    ('a.json', 'a.b.png', False)])
def test_exports_match_images_by_quPaths_stem_rule(tmp_path, name, image, matches):
    """``GeneralTools.stripExtension``: ``.ome.tif(f)`` is stripped whole."""
    for file_name in (name, image):
        (tmp_path / file_name).touch()
    exports, unused = match_exports(tmp_path, {image: tmp_path / image})
    assert (exports == {tmp_path / name: image}) is matches
    assert unused == ([] if matches else [name])
    assert qupath_stem('s.OME.TIFF') == 's' and qupath_stem('a.b.svs') == 'a.b'
    assert qupath_stem('noext') == 'noext' and qupath_stem('t.tar.gz') == 't'


@pytest.mark.parametrize('names, message', [
    (['x.png', 'x.geojson', 'x.json'],
     r'^x\.png: several exports belong to it \(x\.geojson, x\.json\); keep one'),
    (['x.png', 'x.ome.tif', 'x.geojson'],
     r'^x\.geojson: ambiguous, it matches several images: x\.ome\.tif, x\.png'),
    (['x.png', 'y.geojson.gz'], r'^y\.geojson\.gz: no image next to it .* x\.ome\.tif -> '
                                r'x\.geojson'),
])
def test_export_matching_errors(tmp_path, names, message):
    for name in names:
        (tmp_path / name).touch()
    images = {n: tmp_path / n for n in names if not n.endswith(('json', '.gz'))}
    with pytest.raises(ValueError, match=message):
        match_exports(tmp_path, dict(sorted(images.items())))


# ------------------------------------------------------------------ slides and frames

class BoundedSlide:
    """An OpenSlide slide that reports ``openslide.bounds-*`` and a resolution, as a
    MIRAX slide does (the generic TIFF under it has none)."""

    def __init__(self, path, bounds):
        import openslide
        self._slide = openslide.OpenSlide(str(path))
        self.level_dimensions = self._slide.level_dimensions
        self.level_downsamples = self._slide.level_downsamples
        keys = ('x', 'y', 'width', 'height')
        self.properties = dict(self._slide.properties)
        self.properties.update({f'openslide.bounds-{k}': str(v) for k, v in zip(keys, bounds)})
        self.properties.update({'openslide.mpp-x': '0.25', 'openslide.mpp-y': '0.25'})

    def read_region(self, location, level, size):
        return self._slide.read_region(location, level, size)

    def close(self):
        self._slide.close()


def test_slide_frame_with_a_bounds_offset_locates_every_cell(tmp_path, monkeypatch):
    """On a slide with ``openslide.bounds-*`` QuPath's origin is the bounds' corner: the
    export's cells land on their pixels, ``source`` + ``x0``, ``y0`` locate them in the
    file's level 0 within 0.5 px, ``mpp`` is recorded, and the one slide is split by its
    three regions."""
    bounds = (100, 60, 400, 300)
    level0 = [(150.5, 100.25), (333, 222), (460, 330), (120, 300)]
    image = paint_cells(noise_image(np.random.default_rng(3), 500, 600), level0, radius=3)
    src = tmp_path / 'src'
    write_pyramid_tiff(src / 'slide.tif', image, levels=2, tile=128)
    qupath_xy = [(x - bounds[0], y - bounds[1]) for x, y in level0]
    write_features(src / 'slide.geojson', [
        feature(rect(20, 20, 120, 90)), feature(rect(200, 140, 300, 200)),
        feature(rect(320, 230, 395, 295)), feature(rect(0, 200, 60, 280)),
        *[cell(point(x, y), 'tumor') for x, y in qupath_xy],
        cell(point(450, 100), 'tumor')])  # beyond the bounds' width: outside the image
    monkeypatch.setattr(sources, 'open_slide', lambda path, *args: OpenSlideReader(
        BoundedSlide(path, bounds), path))
    with pytest.warns(UserWarning, match='splitting their 4 regions instead'):
        summary = run_prepare('qupath', src, tmp_path / 'out', '--box-size', 8)
    out = tmp_path / 'out'
    located = sorted((x, y) for _, _, x, y in written_cells(out, ['tumor']))
    assert located == sorted(level0)
    for entry in entries(out):
        assert entry['source'] == 'slide.tif' and entry['mpp'] == 0.25
        x0, y0, w, h = entry['x0'], entry['y0'], entry['width'], entry['height']
        assert np.array_equal(read_png(out, entry['file_name']), image[y0:y0 + h, x0:x0 + w])
    for split in SPLITS:
        images, anns, _ = load_coco(out, split)
        for ann in anns:
            entry = images[ann['image_id']]
            x, y = entry['x0'] + ann['point'][0], entry['y0'] + ann['point'][1]
            assert min(abs(x - lx) + abs(y - ly) for lx, ly in level0) < 0.5
            assert tuple(image[int(y), int(x)]) == (20, 10, 60)  # the painted cell
    file_report = summary['report']['files'][0]
    assert file_report['frame'] == list(bounds) and file_report['size'] == [600, 500]
    assert file_report['objects']['annotation']['skipped: outside the image'] == 1
    assert len(json.loads((out / 'splits.json').read_text())['assignment']) == 4
    level = run_prepare('qupath', src, tmp_path / 'level0', '--box-size', 8, '--frame',
                        'level0')
    assert level['report']['files'][0]['frame'] == [0, 0, 600, 500]
    assert sorted((x, y) for _, _, x, y in written_cells(tmp_path / 'level0', ['tumor'])) \
        == sorted(qupath_xy)  # shifted by the bounds: not where the cells are


def test_target_mpp_resamples_a_slide_by_its_own_resolution(tmp_path, monkeypatch):
    """``--target-mpp 0.5`` on a 0.25 um/px slide halves every crop: the entries carry
    ``scale`` 0.5 and ``mpp`` 0.5, their pixels are the slide's area-averaged, and
    ``x0 + point / scale`` is the cell's level-0 pixel; ``--box-size`` (source pixels)
    halves too."""
    bounds = (100, 60, 400, 300)
    level0 = [(150.5, 100.25), (333, 222), (460, 330), (120, 300)]
    image = paint_cells(noise_image(np.random.default_rng(3), 500, 600), level0, radius=3)
    src = tmp_path / 'src'
    write_pyramid_tiff(src / 'slide.tif', image, levels=2, tile=128)
    write_features(src / 'slide.geojson', [
        feature(rect(20, 20, 120, 90)), feature(rect(200, 140, 300, 200)),
        feature(rect(320, 230, 396, 296)), feature(rect(0, 200, 60, 280)),
        *[cell(point(x - bounds[0], y - bounds[1]), 'tumor') for x, y in level0]])
    monkeypatch.setattr(sources, 'open_slide', lambda path, *args: OpenSlideReader(
        BoundedSlide(path, bounds), path))
    with pytest.warns(UserWarning, match='splitting their 4 regions instead'):
        summary = run_prepare('qupath', src, tmp_path / 'out', '--box-size', 16,
                              '--target-mpp', 0.5)
    out = tmp_path / 'out'
    assert summary['sizes']['scale'] == 0.5 and summary['sizes']['median'] == 8
    assert json.loads((out / 'prepare.json').read_text())['applied_scale'] == 0.5
    located = []
    for split in SPLITS:
        images, anns, _ = load_coco(out, split)
        for ann in anns:
            entry = images[ann['image_id']]
            assert (entry['scale'], entry['mpp']) == (0.5, 0.5)
            assert ann['bbox'][2:] == [8.0, 8.0]
            located.append((entry['x0'] + ann['point'][0] / 0.5,
                            entry['y0'] + ann['point'][1] / 0.5))
    assert np.abs(np.sort(located, axis=0) - np.sort(level0, axis=0)).max() < 1
    entry = next(e for e in entries(out, ('test_whole', )))
    x0, y0, w, h = entry['x0'], entry['y0'], entry['width'], entry['height']
    halved = cv2.resize(image[y0:y0 + 2 * h, x0:x0 + 2 * w], (w, h),
                        interpolation=cv2.INTER_AREA)
    assert np.abs(read_png(out, entry['file_name']).astype(int) - halved).max() <= 1


def test_scale_of_plain_images_and_target_mpp_without_a_resolution(tmp_path, capsys):
    src = three_images(tmp_path / 'src', lambda name: [
        cell(point(20, 20), 'tumor'), cell(point(100, 60), 'tumor')])
    summary = run_prepare('qupath', src, tmp_path / 'out', '--scale', 2, '--mpp', 0.5,
                          '--tile', 0)
    assert summary['sizes']['median'] == 64 and summary['sizes']['warning'] is None
    for entry in entries(tmp_path / 'out'):
        assert (entry['width'], entry['height'], entry['scale'], entry['mpp']) == \
            (320, 240, 2.0, 0.25)
    assert 'nucleus size (box side, px after resampling by 2): median 64' in \
        capsys.readouterr().out
    with pytest.raises(ValueError, match=r"^x\.png: --target-mpp 0\.5 needs the image's "
                                         r'micrometres per pixel, which it does not '
                                         r'record; give --mpp M'):
        run_prepare('qupath', src, tmp_path / 'other', '--target-mpp', 0.5)
    summary = run_prepare('qupath', src, tmp_path / 'big', '--box-size', 120)
    assert summary['sizes']['median'] == 100  # 80 px boxes clipped at the border, 120 px
    assert summary['sizes']['warning'].endswith(
        'convert with --scale 0.24 to bring it to about 24 px')


def test_exported_detections_import_as_cells(tmp_path):
    """Round trip: what ``write_geojson`` exports (``infer_slide``'s detections, readable
    by QuPath 0.3 and 0.4+) imports as cells of the same classes, boxes and colours."""
    src, exported = tmp_path / 'src', set()
    for k, name in enumerate('xyz'):
        write_png(src / f'{name}.png', noise_image(np.random.default_rng(k), 120, 160))
        cells = [QuPathObject((10.5 + k, 20, 30.5 + k, 38), 'Tumor', 0.9),
                 QuPathObject((100, 50, 118, 66), 'Lymphocyte', 0.6)]
        write_geojson(src / f'{name}.geojson', cells, {'Tumor': TUMOR, 'Lymphocyte': LYMPHO})
        exported.update({(f'{name}.png', c.label, (c.box[0] + c.box[2]) / 2,
                          (c.box[1] + c.box[3]) / 2) for c in cells})
    summary = run_prepare('qupath', src, tmp_path / 'out')
    assert written_cells(tmp_path / 'out', ['Lymphocyte', 'Tumor']) == exported
    assert summary['colors'] == dict(Lymphocyte=list(LYMPHO), Tumor=list(TUMOR))
    assert summary['report']['totals'] == dict(detection={'cell: Lymphocyte': 3,
                                                          'cell: Tumor': 3})


# ------------------------------------------------------------------- roles and classes

def three_images(root, features_of, size=(160, 120)):
    """``x.png``, ``y.png``, ``z.png`` with the exports ``features_of(name)``."""
    root = Path(root)
    for name in 'xyz':
        write_png(root / f'{name}.png',
                  noise_image(np.random.default_rng(ord(name)), size[1], size[0]))
        write_features(root / f'{name}.geojson', features_of(name))
    return root


def test_calibration_points_are_skipped_or_kept_as_a_class(tmp_path):
    """Unclassified points among classified ones (QuPath's calibration points) are
    skipped and reported, or kept with ``--unclassified-class``."""
    src = three_images(tmp_path / 'src', lambda name: [
        cell(point(20, 20), 'tumor'), feature(multipoint([(1, 1), (150, 110)]))])
    summary = run_prepare('qupath', src, tmp_path / 'a')
    assert summary['raw']['unclassified'] == 6 and summary['raw']['per_class'] == \
        dict(tumor=3)
    assert summary['report']['totals'] == dict(annotation={'cell: tumor': 3,
                                                           UNCLASSIFIED: 6})
    summary = run_prepare('qupath', src, tmp_path / 'b', '--unclassified-class', 'tumor')
    assert summary['raw']['per_class'] == dict(tumor=9)
    summary = run_prepare('qupath', src, tmp_path / 'c', '--unclassified-class', 'other')
    assert summary['raw']['per_class'] == dict(other=6, tumor=3)


def test_derived_classes_keep_their_parent_or_become_their_base(tmp_path):
    def features(name):
        return [feature(point(20, 20), name='Tumor: Positive'),
                dict(type='Feature', id='PathDetectionObject', geometry=rect(50, 50, 60, 62),
                     properties=dict(classification=dict(
                         name='Positive', colorRGB=-1, parentClass=dict(name='Stroma'))))]
    src = three_images(tmp_path / 'src', features)
    summary = run_prepare('qupath', src, tmp_path / 'a')
    assert summary['raw']['per_class'] == {'Stroma: Positive': 3, 'Tumor: Positive': 3}
    with pytest.raises(ValueError, match=r"--classes: no cell has class\(es\) \['Tumor'\]"):
        run_prepare('qupath', src, tmp_path / 'b', '--classes', 'Tumor')
    summary = run_prepare('qupath', src, tmp_path / 'b', '--classes', 'Tumor',
                          '--base-class')
    assert summary['raw']['per_class'] == {'Tumor': 3}
    assert summary['raw']['other_class'] == 3


def test_no_cell_is_an_error_that_names_each_file_and_the_fix(tmp_path):
    """Outlined nuclei as unclassified annotation polygons are regions in QuPath's
    convention: nothing to write, so the run fails and says how to keep them."""
    src = three_images(tmp_path / 'src', lambda name: [
        feature(rect(10, 10, 24, 22)), feature(rect(40, 40, 52, 55))])
    out = tmp_path / 'out'
    with pytest.raises(ValueError) as info:
        run_prepare('qupath', src, out)
    message = str(info.value)
    assert message.startswith('no cell to write (nothing written):\n  x.geojson: '
                              'annotation: region 2\n  y.geojson: annotation: region 2')
    assert '--unclassified-polygons cell' in message
    assert not out.exists()
    summary = run_prepare('qupath', src, out, '--unclassified-polygons', 'cell')
    assert summary['raw']['per_class'] == dict(cell=6)


def test_large_annotation_polygons_of_cell_classes_stop_the_run(tmp_path):
    """Areas drawn with a cell class are ambiguous: one message for every file, with
    the option that makes them regions."""
    def features(name):
        return [feature(rect(5, 5, 150, 110), name='Tumor'), feature(point(30, 30),
                                                                     name='Tumor')]
    src = three_images(tmp_path / 'src', features)
    with pytest.raises(ValueError) as info:
        run_prepare('qupath', src, tmp_path / 'out', '--max-cell-size', '100')
    message = str(info.value)
    assert message.startswith('annotation polygons of cell classes are larger than a cell '
                              '(--max-cell-size 100 px), so they may be areas:\n  x.geojson: '
                              "class 'Tumor': 1 annotation polygon(s) (feature 0: 145x105 px)")
    assert 'y.geojson' in message and 'z.geojson' in message
    assert "pass --region-classes 'Tumor'" in message
    summary = run_prepare('qupath', src, tmp_path / 'out', '--max-cell-size', '100',
                          '--region-classes', 'Tumor')
    assert summary['raw']['regions'] == 3 and summary['raw']['per_class'] == dict(Tumor=3)


def test_one_image_without_regions_needs_them_derived_when_large(tmp_path, monkeypatch):
    """An image without a drawn region larger than a test crop is refused with the fix;
    ``--derive-regions`` boxes its cells, and the one image is split by region."""
    cells = [(20, 20), (30, 25), (200, 150), (100, 60)]
    image = paint_cells(noise_image(np.random.default_rng(4), 180, 240), cells)
    src = tmp_path / 'src'
    write_png(src / 'big.png', image)
    write_features(src / 'big.geojson', [cell(point(x, y), 'tumor') for x, y in cells])
    monkeypatch.setattr(qupath_crops, 'MAX_WHOLE_PIXELS', 100 * 100)
    with pytest.raises(ValueError, match=r'^big\.geojson: image big\.png \(no region is '
                                         r'drawn\) is 240x180 pixels, more than 10000 .* '
                                         r'--derive-regions MARGIN'):
        run_prepare('qupath', src, tmp_path / 'out')
    with pytest.warns(UserWarning, match='splitting their 3 regions'):
        summary = run_prepare('qupath', src, tmp_path / 'out', '--derive-regions', '10',
                              '--box-size', '8')
    assert summary['raw']['derived_regions'] == 4 and summary['raw']['crops'] == 3
    assert written_cells(tmp_path / 'out', ['tumor']) == {
        ('big.png', 'tumor', x, y) for x, y in cells}
    whole = {(im['x0'], im['y0'], im['width'], im['height'])
             for im in entries(tmp_path / 'out') if im['file_name'].startswith('whole/')}
    assert whole <= {(6, 6, 38, 33), (86, 46, 28, 28), (186, 136, 28, 28)}


def test_plane_option(tmp_path):
    def features(name):
        return [cell(point(20, 20), 'tumor'),
                cell(dict(point(30, 30), plane=dict(c=-1, z=2, t=0)), 'tumor')]
    src = three_images(tmp_path / 'src', features)
    with pytest.raises(ValueError, match=r'^x\.geojson: the objects lie on 2 planes '
                                         r'\(z=0,t=0, z=2,t=0\); choose one \(--plane z,t\)$'):
        run_prepare('qupath', src, tmp_path / 'out')
    summary = run_prepare('qupath', src, tmp_path / 'out', '--plane', '0,0')
    assert summary['raw']['per_class'] == dict(tumor=3)
    with pytest.raises(ValueError, match=r'^x\.geojson: objects on plane z=2,t=0, but only '
                                         r'the first plane .* or choose --plane 0,0$'):
        run_prepare('qupath', src, tmp_path / 'other', '--plane', '2,0')


def test_regions_all_outside_their_image_say_where(tmp_path):
    """An export whose every region lies outside its image (another image's export, or a
    slide's frame) stops the run naming the file, the image and the distance, instead of
    converting the whole image."""
    def features(name):
        regions = [feature(rect(10, 10, 150, 110))] if name != 'y' else [
            feature(rect(210, 30, 300, 100)), feature(rect(170, 130, 260, 200))]
        return regions + [cell(point(20, 20), 'tumor')]
    src = three_images(tmp_path / 'src', features)
    with pytest.raises(ValueError, match=(
            r"^y\.geojson: every region \(2\) lies outside the 160x120 image y\.png "
            r"\(QuPath's frame\); the nearest, feature 1 \(x 170\.\.260, y 130\.\.200\), lies "
            r'10 px beyond it in x and 10 px in y: is y\.geojson the export of y\.png\?')):
        run_prepare('qupath', src, tmp_path / 'out')
    assert not (tmp_path / 'out').exists()


def test_regions_outside_their_image_are_named_with_their_extents(tmp_path):
    """A 100x100 image whose export holds three 200 px regions, two of them wholly
    outside it: the run names the file, those regions, their extents and the image
    size, instead of only finding too few regions for the split."""
    write_png(tmp_path / 'src' / 'x.png', noise_image(np.random.default_rng(0), 100, 100))
    write_features(tmp_path / 'src' / 'x.geojson', [
        feature(rect(0, 0, 200, 200)), feature(rect(150, 0, 350, 200)),
        feature(rect(0, 300, 200, 500)), cell(point(20, 20), 'tumor')])
    with pytest.warns(UserWarning, match=r'x\.geojson: 2 of its 3 region'), \
            pytest.raises(ValueError, match=(
                r'^x\.geojson: 2 of its 3 region\(s\) lie outside the 100x100 image x\.png '
                r'and are left out: feature 1 \(x 150\.\.350, y 0\.\.200: 50 px beyond it '
                r'in x, 0 px in y\); feature 2 \(x 0\.\.200, y 300\.\.500: 0 px beyond it in '
                r'x, 200 px in y\); is x\.geojson the export of x\.png\? .*; 1 annotated '
                r'region\(s\) in 1 group\(s\) are too few for the split')):
        run_prepare('qupath', tmp_path / 'src', tmp_path / 'out')
    assert not (tmp_path / 'out').exists()


# -------------------------------------------------------------------- building blocks

def test_region_crops_clip_round_and_merge():
    def box(x0, y0, x1, y1):
        return Region(((x0, y0), (x1, y0), (x1, y1), (x0, y1)))
    regions = [box(10.4, 5.6, 50.2, 40), box(45, 30, 80, 60),  # overlap: merged
               box(50, 80, 90, 95),                               # touches none
               box(-20, 90, 10, 130), box(200, 0, 300, 20)]       # clipped
    assert region_crops(regions, (0, 0, 250, 100)) == [  # row by row
        (200, 0, 50, 20), (10, 5, 70, 55), (50, 80, 40, 15), (0, 90, 10, 10)]
    chain = [box(0, 0, 10, 10), box(30, 0, 40, 10), box(5, 5, 35, 8)]  # merged via the 3rd
    assert region_crops(chain, (0, 0, 100, 100)) == [(0, 0, 40, 10)]
    assert region_crops([box(0, 0, 50, 50), box(120, 0, 130, 9)], (20, 10, 100, 100)) == \
        [(20, 10, 30, 40)]  # clipped to QuPath's frame; one outside it is dropped


def test_slides_are_read_by_the_whole_slide_reader_opened_lazily(tmp_path):
    image = noise_image(np.random.default_rng(1), 300, 420)
    pyramid = write_pyramid_tiff(tmp_path / 'p.tif', image, levels=2, tile=128)
    strips = tmp_path / 's.tif'
    tifffile.imwrite(strips, image, photometric='rgb')  # not tiled: OpenSlide refuses it
    for path, backend in ((pyramid, 'openslide'), (strips, 'tifffile')):
        source = open_image_source(path)
        reader = source.reader
        assert isinstance(reader, LazyImageReader) and source.size == (420, 300)
        assert source.frame == (0, 0, 420, 300) and source.mpp is None
        assert reader._reader is None  # nothing held open until the writer reads
        assert np.array_equal(reader.read_region(100, 37, 250, 200), image[37:237, 100:350])
        assert reader._reader.slide.backend == backend
        with pytest.raises(ValueError, match=r'is not inside level 0 \(420x300\)'):
            reader.read_region(400, 0, 30, 10)
        reader.close()
        assert reader._reader is None
        assert np.array_equal(reader.read_region(5, 6, 30, 20), image[6:26, 5:35])
        reader.close()


def test_command_line_parses_and_the_readers_need_no_model_code():
    """``prepare.py qupath`` builds its options; the readers it uses (``cellio``)
    import neither torch nor mmdet themselves (only the package's registration does)."""
    code = ("from data_prep.prepare import build_parser; "
            "args = build_parser(['qupath']).parse_args(['qupath', '--src', 'a', '--out', "
            "'b']); assert (args.box_size, args.frame, args.max_cell_size) == "
            "(32, 'bounds', 256), args")
    subprocess.run([sys.executable, '-c', code], cwd=REPO, check=True, timeout=60,
                   env=dict(os.environ, PYTHONPATH=str(REPO)))
    heavy = re.compile(r'^\s*(from|import)\s+(torch|mmdet|mmengine|mmcv)\b', re.MULTILINE)
    offenders = [p.name for p in (REPO / 'mmdet_pu' / 'io').rglob('*.py')
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
    ([cell(rect(0, 0, 90, 60), 'tumor')], ('--max-cell-size', '50'),
     r"^annotation polygons of cell classes are larger than a cell \(--max-cell-size 50 "
     r"px\), so they may be areas:\n  x\.geojson: class 'tumor'"),
    ([cell(point(5, 5), 'tumor')], ('--classes', 'tumor,mitosis'),
     r"^--classes: no cell has class\(es\) \['mitosis'\]; the cells' classes are "
     r"\['tumor'\]"),
    ([cell(point(5, 5), 'tumor')], ('--classes', 'tumor,,a'), r'^--classes .*distinct'),
    ([cell(point(5, 5), 'tumor')], ('--classes', 'tumor', '--region-classes', 'tumor'),
     r"^class\(es\) \['tumor'\] are in both --classes and --region-classes"),
    ([cell(point(5, 5), 'tumor')], ('--classes', 'tumor', '--unclassified-class', 'x'),
     r"^--unclassified-class 'x' is not one of --classes \['tumor'\]; add it there"),
    ([cell(point(5, 5), 'tumor')], ('--plane', '0'), r"^--plane '0': expected z,t"),
    ([cell(point(5, 5), 'tumor')], ('--group-regex', 'q*'),
     r"^--group-regex 'q\*': its match in the image path 'x\.png' is empty"),
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
    monkeypatch.setattr(qupath_crops, 'MAX_WHOLE_PIXELS', 70 * 60)
    with pytest.raises(ValueError, match=r'^x\.geojson: region crop 1 at x=0, y=0 is '
                                         r'100x80 pixels, more than 4200'):
        run_prepare('qupath', root, out)
    monkeypatch.undo()
    write_features(root / 'sub' / 'orphan.geojson', [])
    with pytest.raises(ValueError, match=r'^sub/orphan\.geojson: no image next to it'):
        run_prepare('qupath', root, out)
    assert not out.exists()


def test_point_table_reads_rows_by_image_whatever_the_columns(tmp_path):
    """The CSV of points is read on its own: rows by image, in order, any column order,
    ``class`` optional and other columns ignored."""
    path = tmp_path / 'points.csv'
    path.write_text('\ufeffnote,y,image,x,class\nn,2.5,b.png,1,tumor\n\n'
                    'n,4,a.png,3,\nn,6,b.png,5,stroma\n')
    assert read_point_table(path) == {
        'b.png': [PointRow(2, 'b.png', 1, 2.5, 'tumor'), PointRow(5, 'b.png', 5, 6, 'stroma')],
        'a.png': [PointRow(4, 'a.png', 3, 4, None)]}
    path.write_text('image,x,y\n')
    with pytest.raises(ValueError, match=r'points\.csv: no points'):
        read_point_table(path, display='points.csv')


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
