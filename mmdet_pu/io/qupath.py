"""Read and write QuPath GeoJSON: cells and annotated regions, in one place.

Coordinates are level-0 (full-resolution) pixels with the origin at the top-left corner
of the image, exactly as QuPath writes them; boxes are ``(x0, y0, x1, y1)``.

Reading (:func:`read_geojson`)
------------------------------
The file holds a ``FeatureCollection``, a bare list of features or a single ``Feature``
(QuPath 0.2-0.5 write all three). The object type of a feature comes from

* ``properties.objectType`` (QuPath 0.4/0.5: ``annotation``, ``detection``, ``cell``,
  ``tile``, ``tma_core``, ``root``) or ``properties.object_type`` (0.3), else
* the feature's ``id`` when it is a QuPath 0.2 class name (``PathAnnotationObject``,
  ``PathDetectionObject``, ``PathCellObject``, ...), else
* ``annotation`` (what QuPath itself assumes).

Its class is ``properties.classification``: ``{"name": ..., "color": [r, g, b]}``
(0.4/0.5), ``{"name": ..., "colorRGB": <signed 32-bit ARGB int>}`` (0.2/0.3) or, for a
derived class, ``{"names": ["Tumor", "Positive"], ...}`` (read as ``"Tumor: Positive"``,
QuPath's display name). A feature without ``classification`` is unclassified. The class
colours seen are returned in :attr:`QuPathFile.colors`.

What becomes what:

* ``Point`` / ``MultiPoint`` (any object type): one cell per point, a ``box_size`` box
  centred on it (:attr:`QuPathObject.point` keeps the point).
* ``Polygon`` / ``MultiPolygon`` of a ``detection`` or ``cell``: one cell, the bounding
  box of all its parts; for a ``cell`` the box of its ``nucleusGeometry`` (a member of the
  feature, next to ``geometry``) when present, since the cell geometry is the whole cell.
* ``Polygon`` / ``MultiPolygon`` of an ``annotation``: an annotated :class:`Region` (one
  per polygon of a MultiPolygon) when it is a *region* by the rule of
  :func:`is_region_class`, else one cell of its class (its bounding box).
* ``LineString`` / ``MultiLineString`` (rulers) and ``tile`` / ``tma_core`` / ``root``
  objects are skipped and counted in :attr:`QuPathFile.ignored`.

A detection's score is the ``score`` measurement: ``properties.measurements`` is a map
(0.4/0.5) or a list of ``{"name": ..., "value": ...}`` (0.2/0.3); a NaN score (QuPath's
missing value) is ``None``. Anything else is a ``ValueError`` naming the file, the feature
index and the field: malformed JSON (with line and column), a feature without geometry,
an unknown geometry or object type, coordinates that are not finite numbers, and, when
``image_size`` is given, a point outside the image or a polygon that misses it.

Writing (:func:`write_geojson`)
-------------------------------
A QuPath 0.4+ ``FeatureCollection``, written atomically: one feature per cell, its box
as a closed ``Polygon`` ring, ``properties`` = ``objectType``, ``classification``
(``name`` and ``color``: the given colour or :func:`default_color`), ``isLocked: false``
and ``measurements: {"score": s}`` when the cell has a score, as QuPath 0.4+ imports
it; :func:`read_geojson` gives back the same boxes, labels and scores.
"""
import colorsys
import json
import math
import os
import tempfile
import zlib
from dataclasses import dataclass, field
from numbers import Real
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

#: Object types that can hold cells or regions.
OBJECT_TYPES = ('annotation', 'detection', 'cell')
#: Object types that are skipped (QuPath tiles, TMA cores, the hierarchy root).
IGNORED_OBJECT_TYPES = ('tile', 'tma_core', 'root')
#: QuPath 0.2 stored the object type as the feature's ``id``.
LEGACY_OBJECT_IDS = {
    'PathAnnotationObject': 'annotation', 'PathDetectionObject': 'detection',
    'PathCellObject': 'cell', 'PathTileObject': 'tile', 'TMACoreObject': 'tma_core',
    'PathRootObject': 'root'}
#: Geometry types that are skipped (rulers and other lines).
LINE_GEOMETRIES = ('LineString', 'MultiLineString')
#: Prefix (case-insensitive) of the annotation classes that mark regions, e.g. QuPath's
#: built-in ``Region*``.
REGION_CLASS_PREFIX = 'region'

Box = Tuple[float, float, float, float]
Color = Tuple[int, int, int]


@dataclass(frozen=True)
class QuPathObject:
    """One cell or detection.

    Attributes:
        box: ``(x0, y0, x1, y1)`` in level-0 pixels.
        label: classification name, ``None`` if unclassified.
        score: the ``score`` measurement (detections), ``None`` for annotations.
        point: ``(x, y)`` when the cell came from a Point.
        feature: index of the feature in the file it was read from (for messages; not
            compared).
    """
    box: Box
    label: Optional[str]
    score: Optional[float] = None
    point: Optional[Tuple[float, float]] = None
    feature: Optional[int] = field(default=None, compare=False)


@dataclass(frozen=True)
class Region:
    """An annotated region: one polygon (exterior ring and holes) in level-0 pixels.

    Attributes:
        exterior: the outer ring, ``((x, y), ...)``.
        holes: inner rings.
        label: the region's class (``None``, ``"Region*"``, ...).
        feature: index of the feature in its file (not compared).
    """
    exterior: Tuple[Tuple[float, float], ...]
    holes: Tuple[Tuple[Tuple[float, float], ...], ...] = ()
    label: Optional[str] = None
    feature: Optional[int] = field(default=None, compare=False)

    @property
    def bounds(self) -> Box:
        """``(x0, y0, x1, y1)`` of the exterior ring."""
        ring = np.asarray(self.exterior, dtype=np.float64)
        return (*ring.min(axis=0).tolist(), *ring.max(axis=0).tolist())

    def contains(self, points_xy) -> np.ndarray:
        """Whether each ``(x, y)`` lies inside the polygon (even-odd rule, holes out)."""
        points = np.asarray(points_xy, dtype=np.float64).reshape(-1, 2)
        inside = np.zeros(len(points), dtype=bool)
        for ring in (self.exterior, *self.holes):
            inside ^= _crosses_odd(points, np.asarray(ring, dtype=np.float64))
        return inside


def _crosses_odd(points, ring):
    """Whether a ray from each point towards +x crosses ``ring`` an odd number of times."""
    x, y = points[:, :1], points[:, 1:]
    x1, y1 = ring[:, 0], ring[:, 1]
    x2, y2 = np.roll(ring[:, 0], -1), np.roll(ring[:, 1], -1)
    straddles = (y1 > y) != (y2 > y)
    dy = np.where(y2 == y1, 1.0, y2 - y1)  # horizontal edges never straddle
    x_cross = x1 + (y - y1) * (x2 - x1) / dy
    return (straddles & (x < x_cross)).sum(axis=1) % 2 == 1


@dataclass
class QuPathFile:
    """What :func:`read_geojson` found in one file.

    Attributes:
        cells: the cells, in file order (a MultiPoint gives one cell per point).
        regions: the annotated regions, in file order.
        colors: class name -> RGB of every classification seen (cells and regions).
        ignored: features skipped (lines, tiles, TMA cores, the root).
    """
    cells: List[QuPathObject]
    regions: List[Region]
    colors: Dict[str, Color]
    ignored: int = 0


def is_region_class(label, cell_classes=None):
    """Whether an annotation polygon of class ``label`` is an annotated region.

    Without ``cell_classes``: unclassified annotations and classes whose name starts
    with ``Region`` (any case; QuPath's built-in ``Region*``) are regions, every other
    class is a cell class. With ``cell_classes`` (the classes of the dataset): every
    annotation whose class is not one of them is a region.
    """
    if label is None:
        return True
    if cell_classes is not None:
        return label not in cell_classes
    return label.lower().startswith(REGION_CLASS_PREFIX)


def default_color(name) -> Color:
    """A stable colour for a class without one: a hue from the CRC32 of its name."""
    hue = (zlib.crc32(str(name).encode('utf-8')) % 360) / 360.0
    return tuple(int(round(255 * c)) for c in colorsys.hsv_to_rgb(hue, 0.75, 0.9))


# ------------------------------------------------------------------------- reading --

def read_geojson(path, box_size: float = 32, cell_classes=None, image_size=None,
                 display=None) -> QuPathFile:
    """Read the cells and annotated regions of a QuPath GeoJSON file.

    Args:
        path: the ``.geojson`` file.
        box_size: side of the square box centred on each point.
        cell_classes: the dataset's cell classes, or ``None``; decides which annotation
            polygons are regions (:func:`is_region_class`).
        image_size: ``(width, height)`` of the image, to reject points outside it and
            polygons that miss it; ``None`` skips the check.
        display: name of the file in error messages (default: ``path``).

    Raises:
        ValueError: the file is not valid QuPath GeoJSON (the message names the file,
            the feature index and the field).
    """
    if not box_size > 0:
        raise ValueError(f'box_size must be positive, got {box_size}')
    path = Path(path)
    name = path if display is None else display
    features = _features(_load_json(path, name), name)
    cells, regions, colors, ignored = [], [], {}, 0
    cell_classes = None if cell_classes is None else set(cell_classes)
    for index, feature in enumerate(features):
        where = f'{name} feature {index}'
        if not isinstance(feature, dict):
            raise ValueError(f'{where}: expected a GeoJSON Feature object, got '
                             f'{type(feature).__name__}')
        if feature.get('type', 'Feature') != 'Feature':
            raise ValueError(f'{where}: type: expected "Feature", got {feature["type"]!r}')
        properties = feature.get('properties') or {}
        if not isinstance(properties, dict):
            raise ValueError(f'{where}: properties: expected an object, got '
                             f'{type(properties).__name__}')
        object_type = _object_type(feature, properties, where)
        if object_type in IGNORED_OBJECT_TYPES:
            ignored += 1
            continue
        label, color = _classification(properties.get('classification'), where)
        if label is not None and color is not None:
            colors.setdefault(label, color)
        kind, shape = _geometry(feature.get('geometry'), f'{where}: geometry')
        if kind == 'lines':
            ignored += 1
            continue
        if kind == 'points':
            score = _score(properties, where)
            for x, y in shape:
                half = box_size / 2
                cells.append(QuPathObject((x - half, y - half, x + half, y + half), label,
                                          score, (x, y), index))
        elif object_type == 'annotation' and is_region_class(label, cell_classes):
            regions.extend(Region(exterior, holes, label, index)
                           for exterior, holes in shape)
        else:
            if object_type == 'cell' and feature.get('nucleusGeometry') is not None:
                kind, shape = _geometry(feature['nucleusGeometry'],
                                        f'{where}: nucleusGeometry')
                if kind != 'polygons':
                    raise ValueError(f'{where}: nucleusGeometry: expected a Polygon or '
                                     'MultiPolygon')
            box = _bounds([exterior for exterior, _ in shape], where)
            cells.append(QuPathObject(box, label, _score(properties, where), None, index))
    if image_size is not None:
        _check_inside(cells, regions, image_size, name)
    return QuPathFile(cells, regions, colors, ignored)


def _load_json(path, name):
    try:
        text = path.read_text(encoding='utf-8-sig')
    except UnicodeDecodeError as err:
        raise ValueError(f'{name}: not a UTF-8 text file ({err})') from err
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f'{name} line {err.lineno} column {err.colno}: not valid JSON '
                         f'({err.msg})') from err


def _features(content, name):
    """The list of features of a FeatureCollection, a bare list or a single Feature."""
    if isinstance(content, list):
        return content
    if isinstance(content, dict):
        if content.get('type') == 'FeatureCollection':
            features = content.get('features')
            if not isinstance(features, list):
                raise ValueError(f'{name}: features: expected a list of features in the '
                                 'FeatureCollection')
            return features
        if content.get('type') == 'Feature':
            return [content]
    raise ValueError(f'{name}: expected a GeoJSON FeatureCollection, a list of features '
                     f'or a single Feature, got {_describe(content)}')


def _describe(content):
    if isinstance(content, dict):
        return f'an object with type {content.get("type")!r}'
    return type(content).__name__


def _object_type(feature, properties, where):
    for key in ('objectType', 'object_type'):
        if key in properties:
            value = properties[key]
            if value not in (*OBJECT_TYPES, *IGNORED_OBJECT_TYPES):
                raise ValueError(f'{where}: properties.{key}: expected one of '
                                 f'{", ".join(OBJECT_TYPES + IGNORED_OBJECT_TYPES)}, '
                                 f'got {value!r}')
            return value
    legacy = feature.get('id')
    if isinstance(legacy, str) and legacy in LEGACY_OBJECT_IDS:
        return LEGACY_OBJECT_IDS[legacy]
    return 'annotation'


def _classification(value, where):
    """``(name, rgb or None)`` of a classification; ``(None, None)`` if unclassified."""
    if value is None:
        return None, None
    field_name = f'{where}: properties.classification'
    if not isinstance(value, dict):
        raise ValueError(f'{field_name}: expected an object with "name", got '
                         f'{type(value).__name__}')
    name, names = value.get('name'), value.get('names')
    if name is None and isinstance(names, list) and names and all(
            isinstance(n, str) for n in names):
        name = ': '.join(names)  # a derived class, e.g. "Tumor: Positive"
    if not isinstance(name, str) or not name:
        raise ValueError(f'{field_name}: expected a non-empty "name" string (or a '
                         f'"names" list of strings), got {value!r}')
    if 'color' in value:
        color = value['color']
        if not (isinstance(color, list) and len(color) == 3 and all(
                isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 255
                for c in color)):
            raise ValueError(f'{field_name}.color: expected [r, g, b] integers in '
                             f'0..255, got {color!r}')
        return name, tuple(color)
    if 'colorRGB' in value:
        packed = value['colorRGB']
        if not isinstance(packed, int) or isinstance(packed, bool):
            raise ValueError(f'{field_name}.colorRGB: expected an integer (packed ARGB), '
                             f'got {packed!r}')
        return name, ((packed >> 16) & 255, (packed >> 8) & 255, packed & 255)
    return name, None


def _position(value, where):
    if not (isinstance(value, (list, tuple)) and len(value) >= 2 and all(
            isinstance(v, Real) and not isinstance(v, bool) for v in value[:2])):
        raise ValueError(f'{where}: expected a position [x, y] of numbers, got '
                         f'{_short(value)}')
    x, y = float(value[0]), float(value[1])
    if not (math.isfinite(x) and math.isfinite(y)):
        raise ValueError(f'{where}: expected finite coordinates, got {_short(value)}')
    return x, y


def _list(value, where, what):
    if not isinstance(value, (list, tuple)):
        raise ValueError(f'{where}: expected {what}, got {_short(value)}')
    return value


def _ring(value, where):
    ring = [_position(p, f'{where}[{i}]')
            for i, p in enumerate(_list(value, where, 'a ring (list of positions)'))]
    if len(ring) < 3:
        raise ValueError(f'{where}: expected a ring of at least 3 positions, got '
                         f'{len(ring)}')
    return tuple(ring)


def _polygon(value, where):
    rings = _list(value, where, 'a list of rings')
    if not rings:
        raise ValueError(f'{where}: expected at least one ring (the exterior)')
    exterior = _ring(rings[0], f'{where}[0]')
    holes = tuple(_ring(r, f'{where}[{i}]') for i, r in enumerate(rings[1:], start=1))
    return exterior, holes


def _geometry(geometry, where):
    """``('points', [(x, y), ...])``, ``('polygons', [(exterior, holes), ...])`` or
    ``('lines', None)``."""
    if geometry is None:
        raise ValueError(f'{where}: the feature has no geometry (expected a Point, '
                         'MultiPoint, Polygon or MultiPolygon)')
    if not isinstance(geometry, dict):
        raise ValueError(f'{where}: expected a geometry object, got '
                         f'{type(geometry).__name__}')
    kind = geometry.get('type')
    if kind in LINE_GEOMETRIES:
        return 'lines', None
    if kind not in ('Point', 'MultiPoint', 'Polygon', 'MultiPolygon'):
        raise ValueError(f'{where}.type: unknown geometry type {kind!r}; expected Point, '
                         'MultiPoint, Polygon or MultiPolygon (lines are skipped)')
    if 'coordinates' not in geometry:
        raise ValueError(f'{where}.coordinates: missing')
    coordinates, at = geometry['coordinates'], f'{where}.coordinates'
    if kind == 'Point':
        return 'points', [_position(coordinates, at)]
    if kind == 'MultiPoint':
        return 'points', [_position(p, f'{at}[{i}]') for i, p in
                          enumerate(_list(coordinates, at, 'a list of positions'))]
    if kind == 'Polygon':
        return 'polygons', [_polygon(coordinates, at)]
    polygons = _list(coordinates, at, 'a list of polygons')
    if not polygons:
        raise ValueError(f'{at}: expected at least one polygon')
    return 'polygons', [_polygon(p, f'{at}[{i}]') for i, p in enumerate(polygons)]


def _bounds(rings, where):
    points = np.concatenate([np.asarray(r, dtype=np.float64) for r in rings])
    x0, y0 = points.min(axis=0)
    x1, y1 = points.max(axis=0)
    if not (x1 > x0 and y1 > y0):
        raise ValueError(f'{where}: geometry: the polygon has no area (bounds '
                         f'{[float(x0), float(y0), float(x1), float(y1)]})')
    return float(x0), float(y0), float(x1), float(y1)


def _score(properties, where):
    measurements = properties.get('measurements')
    if isinstance(measurements, dict):
        value = measurements.get('score')
    elif isinstance(measurements, list):
        value = next((m.get('value') for m in measurements
                      if isinstance(m, dict) and m.get('name') == 'score'), None)
    else:
        value = None
    if value is None:
        return None
    if not isinstance(value, Real) or isinstance(value, bool):
        raise ValueError(f'{where}: properties.measurements.score: expected a number, '
                         f'got {value!r}')
    return None if math.isnan(value) else float(value)


def _check_inside(cells, regions, image_size, name):
    width, height = image_size
    for cell in cells:
        where = f'{name} feature {cell.feature}'
        if cell.point is not None:
            x, y = cell.point
            if not (0 <= x < width and 0 <= y < height):
                raise ValueError(f'{where}: point (x={x:g}, y={y:g}) is outside the '
                                 f'{width}x{height} image (expected 0 <= x < {width}, '
                                 f'0 <= y < {height})')
        elif not _overlaps(cell.box, width, height):
            raise ValueError(f'{where}: polygon bounds {list(cell.box)} lie outside the '
                             f'{width}x{height} image')
    for region in regions:
        if not _overlaps(region.bounds, width, height):
            raise ValueError(f'{name} feature {region.feature}: region bounds '
                             f'{list(region.bounds)} lie outside the {width}x{height} '
                             'image')


def _overlaps(box, width, height):
    x0, y0, x1, y1 = box
    return x0 < width and y0 < height and x1 > 0 and y1 > 0


def _short(value, limit=60):
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + '...'


# ------------------------------------------------------------------------- writing --

def write_geojson(path, cells: Sequence[QuPathObject], colors: Mapping[str, Color],
                  object_type: str = 'detection') -> None:
    """Write ``cells`` as a QuPath 0.4+ FeatureCollection, atomically.

    Args:
        path: output ``.geojson`` file (parent directories are created); it appears
            complete or not at all (temporary sibling + ``os.replace``).
        cells: the cells; each becomes a closed Polygon ring of its box.
        colors: class name -> RGB; a class without one gets :func:`default_color`.
        object_type: ``detection`` (model output), ``annotation`` or ``cell``. (An
            unclassified ``annotation`` rectangle reads back as a region, not a cell.)
    """
    if object_type not in OBJECT_TYPES:
        raise ValueError(f'object_type must be one of {", ".join(OBJECT_TYPES)}, got '
                         f'{object_type!r}')
    features = [_feature(cell, i, colors, object_type) for i, cell in enumerate(cells)]
    content = json.dumps(dict(type='FeatureCollection', features=features),
                         allow_nan=False)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f'.{path.name}.', suffix='.tmp', dir=path.parent)
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            f.write(content)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _feature(cell, index, colors, object_type):
    x0, y0, x1, y1 = (float(v) for v in cell.box)
    if not (math.isfinite(x0 + y0 + x1 + y1) and x1 > x0 and y1 > y0):
        raise ValueError(f'cell {index}: box {list(cell.box)} must be finite with '
                         'x1 > x0 and y1 > y0')
    properties = dict(objectType=object_type)
    if cell.label is not None:
        color = colors.get(cell.label) or default_color(cell.label)
        properties['classification'] = dict(name=str(cell.label),
                                            color=[int(c) for c in color])
    properties['isLocked'] = False
    if cell.score is not None:
        properties['measurements'] = dict(score=float(cell.score))
    ring = [[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]
    return dict(type='Feature', geometry=dict(type='Polygon', coordinates=[ring]),
                properties=properties)
