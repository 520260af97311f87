"""QuPath GeoJSON reading (every form QuPath 0.2-0.6 writes) and writing
(cellio/qupath/).

The conformance tests read the hand-written exports of ``tests/fixtures/qupath/``
(:data:`tests._qupath_fixtures.FORMS`); each docstring names the qupath-core source
whose format or parsing rule the fixture follows.
"""
import copy
import json

import pytest

from cellio.qupath import (AmbiguousClassError, PlaneError, QuPathObject, Region,
                           Skipped, annotation_role, default_color, export_stem,
                           is_ignored_class, is_region_class, packed_argb,
                           read_geojson, write_geojson)
from tests._qupath_fixtures import (FORM_SIZE, FORMS, STYLES, feature, gzip_export,
                                    multipoint, multirect, point, rect, signed_argb,
                                    write_features, zip_export)

TUMOR, LYMPHO = (200, 0, 0), (0, 0, 230)


def read_form(name, **kwargs):
    kwargs.setdefault('box_size', 8)
    return read_geojson(FORMS / name, image_size=FORM_SIZE, display=name, **kwargs)


def skipped(content):
    return [(s.feature, s.object_type, s.reason, s.count) for s in content.skipped]


# -------------------------------------------------------------- conformance: forms --

def test_qupath_0_5_feature_collection():
    """0.4+ ``FeatureCollection`` (qupath-core ``io/QuPathTypeAdapters``
    ``PathObjectTypeAdapter.write``): UUID ``id``, ``properties.objectType``,
    classification ``{"name", "color": [r, g, b]}`` (``io/GsonTools``
    ``PathClassTypeAdapter``), measurements as a map with ``"NaN"`` strings
    (``MeasurementListTypeAdapter``), a cell's ``nucleusGeometry`` beside its geometry,
    ``isLocked`` only when true."""
    content = read_form('qupath05.geojson')
    assert content.cells == [
        QuPathObject((96.5, 76.25, 104.5, 84.25), 'Tumor', None, (100.5, 80.25)),
        QuPathObject((150, 150, 170, 166), 'Lymphocyte', 0.875),
        QuPathObject((210, 112, 226, 126), 'Tumor', None)]  # the nucleus; score "NaN"
    assert [(c.feature, c.object_type) for c in content.cells] == [
        ('1', 'annotation'), ('2', 'detection'), ('3', 'cell')]
    assert [(r.bounds, r.label, r.feature) for r in content.regions] == [
        ((20, 20, 380, 280), None, '0')]
    assert content.colors == {'Tumor': (200, 0, 0), 'Lymphocyte': (160, 90, 160)}
    assert content.features == {'annotation': 2, 'detection': 1, 'cell': 1}
    assert content.skipped == [] and content.notes == [] and content.planes == [(0, 0)]


def test_qupath_0_3_object_type_color_rgb_and_measurement_list():
    """0.3 (``io/PathObjectTypeAdapters`` of v0.3): ``properties.object_type``, the
    ``tma_core`` spelling, classification as the ``PathClass`` fields ``{"name",
    "colorRGB": <signed ARGB>}``, measurements as a list of ``{"name", "value"}``."""
    content = read_form('qupath03.geojson')
    assert content.cells == [QuPathObject((60, 60, 76, 78), 'Stroma', 0.5),
                             QuPathObject((296, 196, 304, 204), 'Tumor', None, (300, 200))]
    assert [(r.label, r.bounds) for r in content.regions] == [('Region*', (20, 20, 380, 280))]
    assert content.colors == {'Region*': (0, 0, 180), 'Stroma': (150, 200, 150),
                              'Tumor': (200, 0, 0)}
    assert skipped(content) == [('3', 'tmaCore', 'TMA core', 1)]
    assert content.features == {'annotation': 2, 'detection': 1, 'tmaCore': 1}


def test_qupath_0_2_legacy_ids_derived_classes_and_nan_tokens():
    """0.2 (``io/PathObjectTypeAdapters`` of v0.2): the object type as the feature
    ``id`` (``PathCellObject``, ...), a bare list, ``NaN`` tokens of Gson's lenient
    writer, and a derived class as ``PathClass`` fields with ``parentClass``
    (``objects/classes/PathClass.getSingleton``): ``Tumor: Positive`` and ``Stroma:
    Positive`` stay apart; ``base_class`` names them by their base."""
    content = read_form('qupath02.geojson')
    positive = ((-2350288 >> 16) & 255, (-2350288 >> 8) & 255, -2350288 & 255)
    assert content.cells == [QuPathObject((108, 106, 122, 120), 'Tumor: Positive', 0.25),
                             QuPathObject((250, 200, 266, 214), 'Stroma: Positive')]
    assert [c.object_type for c in content.cells] == ['cell', 'detection']
    assert [r.label for r in content.regions] == [None]
    assert content.colors == {'Tumor: Positive': positive, 'Stroma: Positive': positive}
    base = read_form('qupath02.geojson', base_class=True)
    assert [c.label for c in base.cells] == ['Tumor', 'Stroma']
    assert base.colors == {}  # a derived class's colour is not its base's


def test_type_alias_and_unknown_object_types():
    """``properties.type`` is an alias of the object type, and a type QuPath does not
    know is read as an annotation, with a warning (``io/QuPathTypeAdapters``
    ``parseObject``)."""
    content = read_form('type_alias.geojson')
    assert [(c.label, c.object_type, c.box) for c in content.cells] == [
        ('Tumor', 'detection', (50, 50, 64, 66)), ('Tumor', 'annotation', (146, 116, 154, 124))]
    assert content.notes == ["type_alias.geojson feature 1: unknown object type "
                             "'measurementPoint' read as an annotation, as QuPath does"]


def test_hierarchy_export_child_objects_root_tile_and_tma_core():
    """A hierarchy export (``PathObjectTypeAdapter.INSTANCE_HIERARCHY``): ``root``
    (geometry ``{}``), ``tmaCore`` (0.4+ spelling, an ellipse) and ``tile`` objects with
    ``childObjects`` / ``children`` in their properties, read recursively."""
    content = read_form('hierarchy.geojson')
    assert [(c.feature, c.label, c.object_type, c.box) for c in content.cells] == [
        ('0.0.0.0', 'Tumor', 'detection', (60, 60, 76, 74)),
        ('0.1.0', 'Tumor', 'detection', (220, 120, 236, 134))]
    assert [(r.feature, r.bounds) for r in content.regions] == [('0.0.0', (30, 30, 170, 170))]
    assert skipped(content) == [('0', 'root', 'root object', 1),
                                ('0.0', 'tmaCore', 'TMA core', 1), ('0.1', 'tile', 'tile', 1)]
    assert content.features == {'root': 1, 'tmaCore': 1, 'annotation': 1, 'detection': 2,
                                'tile': 1}


def test_classification_forms():
    """``PathClassTypeAdapter.read`` (``io/GsonTools``): a string (split at ``:`` by
    ``PathClass.fromString``), ``{}`` and ``null`` (unclassified), ``names`` (a derived
    class), RGBA ``color`` (alpha last) and a one-element packed colour."""
    content = read_form('classifications.geojson')
    assert [c.label for c in content.cells] == [
        'Tumor: Positive', None, None, 'Tumor: Negative', 'Immune cells', 'Necrosis']
    assert content.colors == {'Tumor: Negative': (112, 112, 225),
                              'Immune cells': (160, 90, 160), 'Necrosis': (50, 50, 50)}
    assert content.notes == []


def test_geometry_types():
    """``io/ROITypeAdapters.parseGeometry``: every GeoJSON geometry; a
    ``GeometryCollection`` keeps its parts of the highest dimension
    (``roi/GeometryTools.homogenizeGeometryCollection``); an empty polygon; an ellipse
    (``isEllipse``) is its polygon."""
    content = read_form('geometries.geojson')
    assert [(c.feature, c.label, c.object_type, c.point) for c in content.cells] == [
        ('0', 'Lymphocyte', 'annotation', (40, 250)), ('0', 'Lymphocyte', 'annotation', (60, 250)),
        ('0', 'Lymphocyte', 'annotation', (80, 250)), ('5', 'Tumor', 'detection', None),
        ('6', 'Tumor', 'annotation', (250, 200)), ('6', 'Tumor', 'annotation', (300, 220)),
        ('8', 'Tumor', 'annotation', None)]
    assert content.cells[3].box == (240, 40, 256, 54)
    assert content.cells[6].box == (40, 142.4, 56, 157.6)
    assert [(r.feature, r.label, len(r.holes)) for r in content.regions] == [
        ('3', None, 1), ('4', 'Region*', 0), ('4', 'Region*', 0)]
    assert skipped(content) == [('1', 'annotation', 'line (ruler)', 1),
                                ('2', 'annotation', 'line (ruler)', 1),
                                ('7', 'annotation', 'empty geometry', 1)]
    assert content.notes == ['geometries.geojson feature 5: 1 lower-dimension part(s) of a '
                             'GeometryCollection dropped (QuPath keeps only its polygons)']


def test_ignored_classes_regions_and_unclassified_points():
    """``PathClass.StandardPathClasses``: ``Ignore*`` and other classes ending with
    ``*`` are QuPath's ignored classes (``PathClassTools.isIgnoredClass``): their polygons
    are ignored areas, their points and detections no cells; ``Region*`` marks regions;
    unclassified points stay unclassified (the converter decides)."""
    content = read_form('ignored.geojson')
    assert [(r.label, r.bounds) for r in content.regions] == [('Region*', (20, 20, 300, 280))]
    assert [(a.label, a.bounds) for a in content.ignored_areas] == [
        ('Ignore*', (40, 40, 140, 140))]
    assert [(c.label, c.point) for c in content.cells] == [
        ('Tumor', (90, 90)), ('Tumor', (200, 200)), (None, (5, 5)), (None, (395, 295)),
        ('Tumor', (350, 150))]
    assert skipped(content) == [('5', 'annotation', "ignored class 'Ignore*'", 1),
                                ('6', 'detection', "ignored class 'Artefact*'", 1)]
    assert is_ignored_class('Tumor: Ignore*') and not is_ignored_class('Region*')
    assert is_region_class('region 2') and not is_region_class('Tumor')


def test_planes():
    """``regions/ImagePlane`` (``"plane": {"c", "z", "t"}`` in the geometry, written by
    ``ROITypeAdapter`` when not the default ``z = t = 0``): objects on several planes need
    a choice; the others are skipped."""
    with pytest.raises(PlaneError, match=r'^planes\.geojson: the objects lie on 2 planes '
                                         r'\(z=0,t=0, z=1,t=0\); choose one '
                                         r'\(plane=\(z, t\)\)$'):
        read_form('planes.geojson')
    content = read_form('planes.geojson', plane=(0, 0))
    assert [c.point for c in content.cells] == [(100, 100)] and content.regions == []
    reason = 'on plane z=1,t=0 (not the chosen z=0,t=0)'
    assert skipped(content) == [('1', 'annotation', reason, 1), ('2', 'annotation', reason, 1)]
    content = read_form('planes.geojson', plane=(1, 0))
    assert [c.point for c in content.cells] == [(120, 100)] and len(content.regions) == 1
    assert content.cells[0].plane == (1, 0)


@pytest.mark.parametrize('name, points', [
    ('bare_list.json', [(210.5, 145.5)]),             # "Export as FeatureCollection" off
    ('single_feature.geojson', [(60, 70), (320.75, 210.5)]),
    ('bare_geometry.geojson', [(30, 30), (330, 230)])])  # an annotation, as PathIO reads it
def test_list_single_feature_and_bare_geometry(name, points):
    """``GsonTools.parseObjectsFromGeoJSON``: a list, a single ``Feature`` or a bare
    geometry (an annotation) instead of a ``FeatureCollection``."""
    assert [c.point for c in read_form(name).cells] == points


def test_gzip_zip_and_json_exports(tmp_path):
    """``io/PathIO.readObjects`` / ``exportObjectsAsGeoJSON``: ``.geojson.gz`` (gzip),
    ``.zip`` (every GeoJSON entry; a single one is named ``<stem>.geojson``) and
    ``.json``."""
    cells = read_form('archived.geojson').cells
    assert read_geojson(gzip_export(FORMS / 'archived.geojson', tmp_path / 'a.geojson.gz'),
                        box_size=8).cells == cells
    assert read_geojson(zip_export(FORMS / 'archived.geojson', tmp_path / 'a.zip'),
                        box_size=8).cells == cells
    (tmp_path / 'a.json').write_bytes((FORMS / 'archived.geojson').read_bytes())
    assert read_geojson(tmp_path / 'a.json', box_size=8).cells == cells
    import zipfile
    with zipfile.ZipFile(tmp_path / 'two.zip', 'w') as archive:
        archive.writestr('b.geojson', (FORMS / 'compressed.geojson').read_text())
        archive.writestr('a.geojson', (FORMS / 'archived.geojson').read_text())
        archive.writestr('readme.txt', 'not an export')
    content = read_geojson(tmp_path / 'two.zip', box_size=8)
    assert [(c.feature, c.point) for c in content.cells] == [
        ('a.geojson:1', (222, 111)), ('b.geojson:0', (123, 234))]
    assert export_stem('x.GeoJSON.gz') == 'x' and export_stem('x.ome.tif') is None
    with zipfile.ZipFile(tmp_path / 'empty.zip', 'w') as archive:
        archive.writestr('readme.txt', 'nothing')
    with pytest.raises(ValueError, match=r'holds no \.geojson or \.json entry'):
        read_geojson(tmp_path / 'empty.zip')
    (tmp_path / 'bad.geojson.gz').write_bytes(b'not gzip')
    with pytest.raises(ValueError, match=r'bad\.geojson\.gz: not a readable gzip file'):
        read_geojson(tmp_path / 'bad.geojson.gz')


def test_measurement_forms(tmp_path):
    """``MeasurementListTypeAdapter.read``: a list (0.2/0.3) or a map (0.4+) whose values
    are numbers, ``NaN`` tokens or the strings ``"NaN"``, ``"Infinity"``/``"inf"``, or
    numerals; only ``score`` is read and a NaN score is no score."""
    def scored(measurements):
        return dict(type='Feature', geometry=rect(0, 0, 4, 4),
                    properties=dict(objectType='detection', measurements=measurements))
    path = tmp_path / 'm.geojson'
    path.write_text(json.dumps([
        scored([dict(name='Area', value=3), dict(name='score', value=0.5)]),
        scored(dict(score='0.25')), scored(dict(score='NaN')), scored(dict(score='-inf')),
        scored(dict(score=float('nan'))), scored([]), scored(dict(Area=1)),
        scored(dict(score='high'))]))
    content = read_geojson(path, display='m.geojson')
    assert [c.score for c in content.cells] == [0.5, 0.25, None, float('-inf'), None,
                                                None, None, None]
    assert content.notes == ["m.geojson feature 7: properties.measurements.score: 'high' "
                             'is not a number; no score']


# ------------------------------------------------------------- styles and roles --

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
    assert [c.feature for c in content.cells] == ['0', '1', '1', '2']
    assert content.colors == {'Tumor': TUMOR, 'Lymphocyte': LYMPHO}
    assert content.regions == [] and content.skipped == []


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
    assert [r.feature for r in content.regions] == ['5', '6', '6']
    assert len(content.regions[0].holes) == 1
    assert content.colors['Region*'] == (0, 0, 180)
    assert skipped(content) == [('7', 'annotation', 'line (ruler)', 1)]


def test_annotation_roles():
    """Unclassified / ``region_classes``: region; listed cell class: cell; ``Region*``:
    region; ``*`` classes: ignored; other classes: cell, or region when the cell classes
    are given."""
    assert annotation_role(None) == annotation_role('Region*') == 'region'
    assert annotation_role('Ignore*') == 'ignored' and annotation_role('Tumor') == 'cell'
    assert annotation_role('Tumor', region_classes={'Tumor'}) == 'region'
    assert annotation_role('Tumor area', cell_classes={'Tumor'}) == 'region'
    assert annotation_role('Region*', cell_classes={'Region*'}) == 'cell'
    assert annotation_role('Ignore*', cell_classes={'Tumor'}) == 'ignored'


def test_cell_and_region_classes_decide_annotation_polygons(tmp_path):
    path = write_features(tmp_path / 'a.geojson', [
        feature(rect(0, 0, 20, 20), name='Tumor'),
        feature(rect(0, 0, 200, 200), name='Stroma area'),
        feature(rect(5, 5, 9, 9), 'detection', 'Stroma area')])
    assert [c.label for c in read_geojson(path).cells] == ['Tumor', 'Stroma area',
                                                           'Stroma area']
    content = read_geojson(path, cell_classes=['Tumor'])
    assert [c.label for c in content.cells] == ['Tumor', 'Stroma area']  # detections stay
    assert [r.label for r in content.regions] == ['Stroma area']
    content = read_geojson(path, region_classes=['Stroma area'])
    assert [c.label for c in content.cells] == ['Tumor', 'Stroma area']
    assert [r.label for r in content.regions] == ['Stroma area']


def test_polygons_larger_than_a_cell_are_ambiguous(tmp_path):
    """An annotation polygon of a cell class larger than ``max_cell_size`` could be an
    area: an error listing every such class; a detection that large is skipped."""
    path = write_features(tmp_path / 'a.geojson', [
        feature(rect(0, 0, 20, 20), name='Tumor'),
        feature(rect(0, 0, 600, 400), name='Tumor'),
        feature(rect(10, 10, 310, 60), name='Stroma'),
        feature(rect(0, 0, 500, 500), 'detection', 'Tumor'),
        feature(rect(0, 0, 700, 700))])  # unclassified: a region, whatever its size
    with pytest.raises(AmbiguousClassError) as info:
        read_geojson(path, max_cell_size=256, display='a.geojson')
    assert info.value.oversized == {'Tumor': [('1', 600, 400)], 'Stroma': [('2', 300, 50)]}
    assert str(info.value) == (
        "a.geojson: class 'Stroma': 1 annotation polygon(s) (feature 2: 300x50 px); "
        "class 'Tumor': 1 annotation polygon(s) (feature 1: 600x400 px) would be cells but "
        'are larger than a cell (max_cell_size 256 px): regions (region_classes) or cells '
        '(a larger max_cell_size)?')
    content = read_geojson(path, max_cell_size=256, region_classes={'Tumor', 'Stroma'})
    assert [r.bounds for r in content.regions] == [
        (0, 0, 20, 20), (0, 0, 600, 400), (10, 10, 310, 60), (0, 0, 700, 700)]
    assert content.cells == []
    assert skipped(content) == [('3', 'detection', 'larger than a cell (max_cell_size 256 '
                                 'px)', 1)]
    assert len(read_geojson(path, max_cell_size=600).cells) == 4


def test_unclassified_polygons_as_cells(tmp_path):
    path = write_features(tmp_path / 'a.geojson', [
        feature(rect(0, 0, 20, 16)), feature(rect(0, 0, 300, 200))])
    content = read_geojson(path, max_cell_size=64, unclassified_polygons='cell')
    assert content.cells == [QuPathObject((0, 0, 20, 16), None)]
    assert [r.bounds for r in content.regions] == [(0, 0, 300, 200)]


def test_signed_argb_colour_and_lenient_colours(tmp_path):
    path = tmp_path / 'a.geojson'
    path.write_text(json.dumps([
        dict(type='Feature', geometry=point(1, 1), properties=dict(  # 0.3's Tumor
            classification=dict(name='Tumor', colorRGB=-3670016))),
        dict(type='Feature', geometry=point(2, 2), properties=dict(
            classification=dict(name='A', color=[1, 2, 300]))),
        dict(type='Feature', geometry=point(3, 3), properties=dict(
            classification=dict(name='B', colorRGB='red')))]))
    content = read_geojson(path, display='a.geojson')
    assert content.colors == {'Tumor': (200, 0, 0)}
    assert signed_argb((200, 0, 0)) == -3670016
    assert content.notes == [
        'a.geojson feature 1: properties.classification.color: [1, 2, 300] is not '
        '[r, g, b(, a)] in 0..255; colour ignored',
        "a.geojson feature 2: properties.classification.colorRGB: 'red' is not a packed "
        'colour integer; ignored']
    assert [c.label for c in content.cells] == ['Tumor', 'A', 'B']


def test_outside_the_image_is_skipped_and_offset_maps_to_level0(tmp_path):
    """``image_size`` is QuPath's image: objects outside it are skipped; ``offset``
    (QuPath's origin in level-0 pixels) is added to everything read."""
    path = write_features(tmp_path / 'a.geojson', [
        feature(point(99.5, 79.5), name='T'), feature(point(120, 5), name='T'),
        feature(point(-0.5, 5), 'detection', 'T'),
        feature(rect(100, 0, 130, 10), 'detection', 'T'),
        feature(rect(90, 70, 130, 90), 'detection', 'T'),  # overlaps: kept (clipped later)
        feature(rect(0, 80, 500, 90)), feature(rect(10, 10, 50, 40)),
        feature(rect(0, 0, 30, 30), name='Ignore*')])
    content = read_geojson(path, image_size=(100, 80), offset=(1000, 2000))
    assert [c.feature for c in content.cells] == ['0', '4']
    assert content.cells[0] == QuPathObject((1083.5, 2063.5, 1115.5, 2095.5), 'T', None,
                                            (1099.5, 2079.5))
    assert content.cells[1].box == (1090, 2070, 1130, 2090)
    assert [r.bounds for r in content.regions] == [(1010, 2010, 1050, 2040)]
    assert content.ignored_areas[0].bounds == (1000, 2000, 1030, 2030)
    assert skipped(content) == [
        ('1', 'annotation', 'outside the image', 1), ('2', 'detection', 'outside the image', 1),
        ('3', 'detection', 'outside the image', 1), ('5', 'annotation', 'outside the image', 1)]


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
    assert content.regions == [] and content.skipped == []
    assert content.colors == {'Tumor': TUMOR, 'Lymphocyte': LYMPHO,
                              'Stroma': default_color('Stroma')}
    features = json.loads(path.read_text())['features']
    first = features[0]
    assert first['geometry'] == dict(type='Polygon', coordinates=[[
        [1.5, 2.25], [30, 2.25], [30, 40.125], [1.5, 40.125], [1.5, 2.25]]])
    assert first['properties'] == dict(
        objectType='detection', object_type='detection',
        classification=dict(name='Tumor', color=list(TUMOR), colorRGB=-3670016),
        isLocked=False, measurements=[dict(name='score', value=0.9)])
    assert 'classification' not in features[2]['properties']
    assert 'measurements' not in features[3]['properties']
    assert [p.name for p in path.parent.iterdir()] == ['dets.geojson']


def test_export_reads_the_same_in_qupath_0_4_and_0_3(tmp_path):
    """The export carries ``objectType`` (read first by 0.4+, ``io/QuPathTypeAdapters``)
    and ``object_type`` (the only spelling 0.3 reads, ``io/PathObjectTypeAdapters`` of
    v0.3) and the score as a measurement list, which both read
    (``MeasurementListTypeAdapter``); its classification has the ``color`` 0.4+ needs
    (``PathClassTypeAdapter``). Each version's view reads the same cells."""
    cells = [QuPathObject((1, 2, 30, 40), 'Tumor', 0.5),
             QuPathObject((50, 60, 70, 90), 'Tumor: Positive', 0.25)]
    path = tmp_path / 'dets.geojson'
    write_geojson(path, cells, {'Tumor': TUMOR})
    written = json.loads(path.read_text())
    for drop in ('object_type', 'objectType'):  # the 0.4+ view, the 0.3 view
        view = copy.deepcopy(written)
        for item in view['features']:
            del item['properties'][drop]
            assert 'color' in item['properties']['classification']
        (tmp_path / f'{drop}.geojson').write_text(json.dumps(view))
        content = read_geojson(tmp_path / f'{drop}.geojson')
        assert content.cells == cells
        assert {c.object_type for c in content.cells} == {'detection'}


def test_export_colour_is_read_by_qupath_0_3_too(tmp_path):
    """QuPath 0.2/0.3 read a class's colour from ``colorRGB``, the packed signed 32-bit
    ARGB of ``ColorTools.makeRGB`` (``(255 << 24) + (r << 16) + (g << 8) + b`` in Java
    ``int``), and 0.4+ reads a classification with ``colorRGB`` as the ``PathClass``
    fields: the export carries ``colorRGB`` beside ``color``, and a derived class as its
    last name with its ``parentClass``, so every version reads the class and its
    colour."""
    assert packed_argb((220, 20, 60)) == -2354116 == 0xFFDC143C - (1 << 32)
    assert packed_argb((255, 255, 255)) == -1 and packed_argb((0, 0, 0)) == -16777216
    assert all(packed_argb(rgb) == signed_argb(rgb) for rgb in (TUMOR, LYMPHO, (1, 2, 3)))
    crimson = (220, 20, 60)
    cells = [QuPathObject((1, 2, 30, 40), 'mitosis', 0.5),
             QuPathObject((50, 60, 70, 90), 'Tumor: Positive', 0.25)]
    path = tmp_path / 'dets.geojson'
    write_geojson(path, cells, {'mitosis': crimson, 'Tumor: Positive': LYMPHO})
    first, derived = (f['properties']['classification']
                      for f in json.loads(path.read_text())['features'])
    assert first == dict(name='mitosis', color=[220, 20, 60], colorRGB=-2354116)
    assert derived == dict(name='Positive', color=list(LYMPHO), colorRGB=signed_argb(LYMPHO),
                           parentClass=dict(name='Tumor', color=list(default_color('Tumor')),
                                            colorRGB=signed_argb(default_color('Tumor'))))
    content = read_geojson(path)
    assert content.cells == cells
    assert content.colors == {'mitosis': crimson, 'Tumor: Positive': LYMPHO}


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
    ('{"type": "Topology", "objects": {}}',
     r"a\.geojson: expected a GeoJSON FeatureCollection, a Feature, a geometry or a list "
     r"of them, got an object with type 'Topology'"),
    ('{"type": "FeatureCollection", "features": {}}', r'features: expected a list'),
    (_feature_json(dict(type='Circle', coordinates=[1, 2])),
     r"feature 1: geometry\.type: unknown geometry type 'Circle'; expected one of Point"),
    (_feature_json(dict(type='Point', coordinates=['a', 2])),
     r'feature 1: geometry\.coordinates: expected a position \[x, y\] of numbers, got '
     r'\["a", 2\]'),
    (_feature_json(dict(type='Point', coordinates=[float('nan'), 2])),
     r'feature 1: geometry\.coordinates: expected finite coordinates'),
    (_feature_json(dict(type='MultiPolygon', coordinates=[[[[0, 0], [1, 0], [True, 1]]]])),
     r'feature 1: geometry\.coordinates\[0\]\[0\]\[2\]: expected a position'),
    (_feature_json(dict(type='Polygon', coordinates=[[[0, 0], [1, 0]]])),
     r'feature 1: geometry\.coordinates\[0\]: expected a ring of at least 3 positions'),
    (_feature_json(dict(type='Point')), r'feature 1: geometry\.coordinates: missing'),
    (_feature_json(dict(type='GeometryCollection')),
     r'feature 1: geometry\.geometries: expected a list of geometries'),
    (_feature_json(dict(type='Point', coordinates=[1, 1], plane=dict(z='top'))),
     r"feature 1: geometry\.plane\.z: expected an integer, got 'top'"),
    (_feature_json(point(1, 1), dict(classification=dict(name=3, color=[1, 2, 3]))),
     r'feature 1: properties\.classification: expected a "name" string or a "names" list'),
    (_feature_json(point(1, 1), dict(classification=7)),
     r'feature 1: properties\.classification: expected an object or a string, got int'),
    ('[{"type": "Feature", "geometry": null, "properties": []}]',
     r'feature 0: properties: expected an object, got list'),
])
def test_malformed_input_names_file_feature_and_field(tmp_path, text, message):
    path = tmp_path / 'a.geojson'
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_geojson(path, display='a.geojson')


def test_what_qupath_reads_leniently_is_skipped_and_reported(tmp_path):
    """QuPath reads a feature without geometry (``null`` or ``{}``), a polygon without
    area and a non-polygon nucleus, and skips list items that are no feature
    (``GsonTools.addPathObjects``): skipped or noted here, never an error."""
    path = tmp_path / 'a.geojson'
    path.write_text(json.dumps([
        dict(type='Feature', geometry=None, properties=dict(objectType='annotation')),
        dict(type='Feature', geometry={}, properties=dict(objectType='detection')),
        dict(type='Feature', geometry=rect(0, 0, 0, 5), properties=dict(
            objectType='detection', classification='T')),
        dict(type='Feature', geometry=rect(0, 0, 20, 20), nucleusGeometry=point(3, 3),
             properties=dict(objectType='cell', classification='T')),
        7, 'text',
        dict(type='Feature', geometry=point(1, 1), properties=dict(
            objectType=['annotation'], classification=dict(name=None, color=[1, 2, 3])))]))
    content = read_geojson(path, display='a.geojson')
    assert content.cells == [QuPathObject((0, 0, 20, 20), 'T'),
                             QuPathObject((-15, -15, 17, 17), None, None, (1, 1))]
    assert skipped(content) == [
        ('0', 'annotation', 'no geometry', 1), ('1', 'detection', 'no geometry', 1),
        ('2', 'detection', 'polygon without area', 1),
        ('4', 'not a feature', 'not a GeoJSON Feature (int)', 1),
        ('5', 'not a feature', 'not a GeoJSON Feature (str)', 1)]
    assert content.notes == ['a.geojson feature 3: nucleusGeometry is not a polygon; the '
                             'cell outline is used',
                             "a.geojson feature 6: unknown object type ['annotation'] read "
                             'as an annotation, as QuPath does']
    assert content.features == {'annotation': 2, 'detection': 2, 'cell': 1,
                                'not a feature': 2}
    assert Skipped('0', 'annotation', 'no geometry') == content.skipped[0]


def test_notes_are_capped(tmp_path):
    path = write_features(tmp_path / 'a.geojson', [
        dict(type='Feature', geometry=point(i, 1), properties=dict(objectType='blob'))
        for i in range(105)])
    notes = read_geojson(path, display='a.geojson').notes
    assert len(notes) == 101 and notes[-1] == 'a.geojson: ... and 5 more note(s) like these'


def test_bad_box_size(tmp_path):
    with pytest.raises(ValueError, match='box_size must be positive'):
        read_geojson(write_features(tmp_path / 'a.geojson', []), box_size=0)
