"""QuPath GeoJSON reading (three QuPath styles) and writing (mmdet_pu/io/qupath.py)."""
import json

import pytest

from mmdet_pu.io.qupath import (QuPathObject, Region, default_color, is_region_class,
                                read_geojson, write_geojson)
from tests._qupath_fixtures import (STYLES, feature, multipoint, multirect, point, rect,
                                    write_features)

TUMOR, LYMPHO = (200, 0, 0), (0, 0, 230)


@pytest.mark.parametrize('style', STYLES)
def test_points_and_multipoints(tmp_path, style):
    path = write_features(tmp_path / 'a.geojson', [
        feature(point(10, 20.5), name='Tumor', color=TUMOR, style=style),
        feature(multipoint([(40, 50), (60, 70)]), name='Lymphocyte', color=LYMPHO,
                style=style),
        feature(point(5, 6), style=style)])
    content = read_geojson(path, box_size=8)
    assert content.cells == [
        QuPathObject((6, 16.5, 14, 24.5), 'Tumor', None, (10, 20.5)),
        QuPathObject((36, 46, 44, 54), 'Lymphocyte', None, (40, 50)),
        QuPathObject((56, 66, 64, 74), 'Lymphocyte', None, (60, 70)),
        QuPathObject((1, 2, 9, 10), None, None, (5, 6))]
    assert [c.feature for c in content.cells] == [0, 1, 1, 2]
    assert content.colors == {'Tumor': TUMOR, 'Lymphocyte': LYMPHO}
    assert content.regions == [] and content.ignored == 0


@pytest.mark.parametrize('style', STYLES)
def test_polygons_cells_and_regions(tmp_path, style):
    path = write_features(tmp_path / 'a.geojson', [
        feature(rect(10, 10, 30, 24), 'detection', 'Lymphocyte', LYMPHO, style, score=0.75),
        feature(rect(40, 40, 80, 90), 'cell', 'Tumor', TUMOR, style,
                nucleus=rect(50, 55, 62, 70)),
        feature(rect(100, 100, 120, 130), 'cell', 'Tumor', TUMOR, style),
        feature(multirect((0, 0, 4, 4), (6, 7, 9, 12)), 'detection', None, style=style),
        feature(rect(200, 10, 215, 22), 'annotation', 'Tumor', TUMOR, style),
        feature(rect(0, 0, 300, 200, hole=(10, 10, 50, 50)), 'annotation', style=style),
        feature(multirect((300, 0, 400, 80), (300, 100, 380, 190)), 'annotation',
                'Region*', (0, 0, 180), style),
        feature(dict(type='LineString', coordinates=[[0, 0], [5, 5]]), 'annotation',
                style=style)])
    content = read_geojson(path)
    assert content.cells == [
        QuPathObject((10, 10, 30, 24), 'Lymphocyte', 0.75),
        QuPathObject((50, 55, 62, 70), 'Tumor'),  # the nucleus, not the cell outline
        QuPathObject((100, 100, 120, 130), 'Tumor'),
        QuPathObject((0, 0, 9, 12), None),
        QuPathObject((200, 10, 215, 22), 'Tumor')]  # a classified annotation polygon
    assert [r.bounds for r in content.regions] == [
        (0, 0, 300, 200), (300, 0, 400, 80), (300, 100, 380, 190)]
    assert [r.label for r in content.regions] == [None, 'Region*', 'Region*']
    assert [r.feature for r in content.regions] == [5, 6, 6]
    assert len(content.regions[0].holes) == 1
    assert content.colors['Region*'] == (0, 0, 180)
    assert content.ignored == 1


def test_cell_classes_decide_which_annotation_polygons_are_regions(tmp_path):
    path = write_features(tmp_path / 'a.geojson', [
        feature(rect(0, 0, 20, 20), name='Tumor'),
        feature(rect(0, 0, 500, 500), name='Stroma area'),
        feature(rect(5, 5, 9, 9), 'detection', 'Stroma area')])
    assert [c.label for c in read_geojson(path).cells] == ['Tumor', 'Stroma area',
                                                           'Stroma area']
    content = read_geojson(path, cell_classes=['Tumor'])
    assert [c.label for c in content.cells] == ['Tumor', 'Stroma area']  # detections stay
    assert [r.label for r in content.regions] == ['Stroma area']
    assert is_region_class(None) and is_region_class('region 2') and \
        not is_region_class('Tumor')
    assert is_region_class('Region*', cell_classes={'Region*'}) is False


@pytest.mark.parametrize('form', ['collection', 'list', 'single'])
def test_collection_list_and_single_feature(tmp_path, form):
    path = write_features(tmp_path / 'a.geojson', [feature(point(3, 4), name='A')], form)
    assert read_geojson(path, box_size=2).cells == [QuPathObject((2, 3, 4, 5), 'A',
                                                                 point=(3, 4))]


def test_legacy_details(tmp_path):
    features = [
        feature(point(1, 1), 'detection', style='0.2'),
        dict(type='Feature', id='PathTileObject', geometry=rect(0, 0, 9, 9), properties={}),
        dict(type='Feature', geometry=rect(0, 0, 10, 10),
             properties=dict(objectType='tma_core')),
        dict(type='Feature', geometry=rect(2, 2, 6, 6), properties=dict(
            objectType='detection', measurements=dict(score=float('nan')),
            classification=dict(names=['Tumor', 'Positive'], color=[1, 2, 3])))]
    content = read_geojson(write_features(tmp_path / 'a.geojson', features))
    assert content.cells[1] == QuPathObject((2, 2, 6, 6), 'Tumor: Positive', None)
    assert content.colors == {'Tumor: Positive': (1, 2, 3)}
    assert content.ignored == 2  # the tile and the TMA core


def test_signed_argb_colour(tmp_path):
    path = tmp_path / 'a.geojson'  # QuPath 0.3's default Tumor class
    path.write_text(json.dumps(dict(type='Feature', geometry=point(1, 1), properties=dict(
        classification=dict(name='Tumor', colorRGB=-3670016)))))
    assert read_geojson(path).colors == {'Tumor': (200, 0, 0)}


def test_region_bounds_and_contains_with_a_hole():
    region = Region(exterior=((0, 0), (100, 0), (100, 60), (0, 60), (0, 0)),
                    holes=(((10, 10), (40, 10), (40, 40), (10, 40), (10, 10)),))
    assert region.bounds == (0, 0, 100, 60)
    inside = region.contains([[5, 5], [20, 20], [99, 59], [101, 5], [50, -1], [70, 30]])
    assert inside.tolist() == [True, False, True, False, False, True]
    triangle = Region(((0, 0), (10, 0), (0, 10)))
    assert triangle.contains([[2, 2], [6, 6]]).tolist() == [True, False]


# --------------------------------------------------------------------------- writer --

def test_write_read_round_trip(tmp_path):
    cells = [QuPathObject((1.5, 2.25, 30, 40.125), 'Tumor', 0.9),
             QuPathObject((50, 60, 70, 90), 'Lymphocyte', 0.123456789),
             QuPathObject((5, 5, 9, 9), None, None),
             QuPathObject((0, 0, 12, 12), 'Stroma', None)]
    path = tmp_path / 'out' / 'dets.geojson'
    write_geojson(path, cells, {'Tumor': TUMOR, 'Lymphocyte': LYMPHO})
    content = read_geojson(path)
    assert content.cells == cells
    assert content.regions == []
    assert content.colors == {'Tumor': TUMOR, 'Lymphocyte': LYMPHO,
                              'Stroma': default_color('Stroma')}
    features = json.loads(path.read_text())['features']
    first = features[0]
    assert first['geometry'] == dict(type='Polygon', coordinates=[[
        [1.5, 2.25], [30, 2.25], [30, 40.125], [1.5, 40.125], [1.5, 2.25]]])
    assert first['properties'] == dict(
        objectType='detection', classification=dict(name='Tumor', color=list(TUMOR)),
        isLocked=False, measurements=dict(score=0.9))
    assert 'classification' not in features[2]['properties']
    assert 'measurements' not in features[3]['properties']
    assert [p.name for p in path.parent.iterdir()] == ['dets.geojson']


def test_write_annotations_round_trip_as_cells(tmp_path):
    cells = [QuPathObject((1, 2, 3, 4), 'Tumor'), QuPathObject((5, 6, 7, 8), 'Tumor')]
    path = tmp_path / 'a.geojson'
    write_geojson(path, cells, {}, object_type='annotation')
    assert read_geojson(path).cells == cells
    assert json.loads(path.read_text())['features'][0]['properties']['objectType'] == \
        'annotation'


def test_write_is_atomic_and_validates(tmp_path):
    path = tmp_path / 'a.geojson'
    path.write_text('old')
    with pytest.raises(ValueError, match=r'cell 1: box \[5, 5, 5, 9\] must be finite'):
        write_geojson(path, [QuPathObject((0, 0, 1, 1), 'A'),
                             QuPathObject((5, 5, 5, 9), 'A')], {})
    with pytest.raises(ValueError, match='object_type must be one of'):
        write_geojson(path, [], {}, object_type='tile')
    assert path.read_text() == 'old'
    assert [p.name for p in tmp_path.iterdir()] == ['a.geojson']


def test_default_colour_is_stable_and_distinct():
    assert default_color('cell') == (75, 230, 57)
    colors = {default_color(name) for name in ('tumor', 'lymphocyte', 'stroma', 'cell')}
    assert len(colors) == 4
    assert all(0 <= c <= 255 for rgb in colors for c in rgb)


# ---------------------------------------------------------------------- bad input ----

def _feature_json(geometry, properties=None, **extra):
    return json.dumps(dict(type='FeatureCollection', features=[
        dict(type='Feature', geometry=point(1, 1), properties={}),
        dict(type='Feature', geometry=geometry, properties=properties or {}, **extra)]))


@pytest.mark.parametrize('text, message', [
    ('{"type": "FeatureCollection",\n  "features": [}',
     r'a\.geojson line 2 column 16: not valid JSON'),
    ('{"type": "Point", "coordinates": [1, 2]}',
     r"a\.geojson: expected a GeoJSON FeatureCollection, a list of features or a single "
     r"Feature, got an object with type 'Point'"),
    ('{"type": "FeatureCollection", "features": {}}', r'features: expected a list'),
    (_feature_json(None), r'a\.geojson feature 1: geometry: the feature has no geometry'),
    (_feature_json(dict(type='Circle', coordinates=[1, 2])),
     r"feature 1: geometry\.type: unknown geometry type 'Circle'; expected Point"),
    (_feature_json(dict(type='Point', coordinates=['a', 2])),
     r'feature 1: geometry\.coordinates: expected a position \[x, y\] of numbers, got '
     r'\["a", 2\]'),
    (_feature_json(dict(type='Point', coordinates=[float('nan'), 2])),
     r'feature 1: geometry\.coordinates: expected finite coordinates'),
    (_feature_json(dict(type='MultiPolygon', coordinates=[[[[0, 0], [1, 0], [True, 1]]]])),
     r'feature 1: geometry\.coordinates\[0\]\[0\]\[2\]: expected a position'),
    (_feature_json(dict(type='Polygon', coordinates=[[[0, 0], [1, 0]]])),
     r'feature 1: geometry\.coordinates\[0\]: expected a ring of at least 3 positions'),
    (_feature_json(dict(type='Polygon', coordinates=[[[0, 0], [5, 0], [9, 0], [0, 0]]]),
                   dict(objectType='detection')),
     r'feature 1: geometry: the polygon has no area'),
    (_feature_json(dict(type='Point')), r'feature 1: geometry\.coordinates: missing'),
    (_feature_json(point(1, 1), dict(objectType='blob')),
     r"feature 1: properties\.objectType: expected one of annotation, detection, cell, "
     r"tile, tma_core, root, got 'blob'"),
    (_feature_json(point(1, 1), dict(classification=dict(color=[1, 2, 3]))),
     r'feature 1: properties\.classification: expected a non-empty "name" string'),
    (_feature_json(point(1, 1), dict(classification=dict(name='A', color=[1, 2, 300]))),
     r'feature 1: properties\.classification\.color: expected \[r, g, b\] integers'),
    (_feature_json(point(1, 1), dict(classification=dict(name='A', colorRGB='red'))),
     r'feature 1: properties\.classification\.colorRGB: expected an integer'),
    (_feature_json(point(1, 1), dict(measurements=dict(score='high'))),
     r"feature 1: properties\.measurements\.score: expected a number, got 'high'"),
    (_feature_json(rect(0, 0, 5, 5), dict(objectType='cell'),
                   nucleusGeometry=point(1, 1)),
     r'feature 1: nucleusGeometry: expected a Polygon or MultiPolygon'),
    ('[{"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 1]}}, 7]',
     r'feature 1: expected a GeoJSON Feature object, got int'),
])
def test_malformed_input_names_file_feature_and_field(tmp_path, text, message):
    path = tmp_path / 'a.geojson'
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_geojson(path)


@pytest.mark.parametrize('geometry, object_type, message', [
    (point(120, 5), 'annotation',
     r'b\.geojson feature 1: point \(x=120, y=5\) is outside the 100x80 image '
     r'\(expected 0 <= x < 100, 0 <= y < 80\)'),
    (point(-0.5, 5), 'detection', r'point \(x=-0.5, y=5\) is outside'),
    (rect(100, 0, 130, 10), 'detection',
     r'feature 1: polygon bounds \[100\.0, 0\.0, 130\.0, 10\.0\] lie outside the 100x80'),
    (rect(0, 80, 500, 90), 'annotation',
     r'feature 1: region bounds \[0\.0, 80\.0, 500\.0, 90\.0\] lie outside the 100x80'),
])
def test_outside_the_image(tmp_path, geometry, object_type, message):
    path = write_features(tmp_path / 'a.geojson', [
        feature(point(99.5, 79.5)), feature(geometry, object_type)])
    with pytest.raises(ValueError, match=message):
        read_geojson(path, image_size=(100, 80), display='b.geojson')
    read_geojson(path)  # no image size: no check


def test_bad_box_size(tmp_path):
    with pytest.raises(ValueError, match='box_size must be positive'):
        read_geojson(write_features(tmp_path / 'a.geojson', []), box_size=0)
