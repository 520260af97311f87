"""The fields of a QuPath feature: its geometry, plane and ``score`` measurement.

It follows qupath-core ``io/ROITypeAdapters`` (geometries), ``regions/ImagePlane`` and
``io/QuPathTypeAdapters`` ``MeasurementListTypeAdapter`` (``io/PathObjectTypeAdapters``
before 0.4). Every error names the field (``where``) and what was expected.

* **Geometry** (:func:`read_geometry`): ``Point``, ``MultiPoint``, ``LineString``,
  ``MultiLineString``, ``Polygon``, ``MultiPolygon`` and ``GeometryCollection``
  (``geometries``), which keeps, like QuPath's
  ``GeometryTools.homogenizeGeometryCollection``, only its parts of the highest dimension
  (polygons, else lines, else points); ``plane`` ``{"c", "z", "t"}`` (default ``z = t =
  0``; ``c`` is ignored).
* **Measurements** (:func:`read_score`): a map (0.4+) or a list of ``{"name", "value"}``
  (0.2/0.3), values numbers or strings (``"NaN"``, ``"Infinity"``, ``"-inf"``,
  numerals); only ``score`` is read.
"""
import json
import math
from dataclasses import dataclass
from numbers import Real

GEOMETRY_TYPES = ('Point', 'MultiPoint', 'LineString', 'MultiLineString', 'Polygon',
                  'MultiPolygon', 'GeometryCollection')


@dataclass
class Shape:
    """The parts of a feature's geometry that are kept.

    Attributes:
        kind: ``'points'``, ``'polygons'``, ``'lines'`` or ``'empty'``.
        points: ``[(x, y), ...]`` when ``kind`` is ``'points'``.
        polygons: ``[(exterior, holes), ...]`` when ``kind`` is ``'polygons'``.
        plane: ``(z, t)``.
        discarded: lower-dimension parts of a ``GeometryCollection`` left out.
    """
    kind: str
    points: list
    polygons: list
    plane: tuple
    discarded: int = 0


def is_int(value) -> bool:
    """Whether ``value`` is a finite JSON number with an integer value."""
    return (isinstance(value, Real) and not isinstance(value, bool)
            and math.isfinite(value) and float(value) == int(value))


def short(value, limit=60) -> str:
    """``value`` as JSON (a string as its repr), cut to ``limit`` characters."""
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + '...'


def read_geometry(geometry, where):
    """The :class:`Shape` of a geometry, ``None`` if there is none (``null`` or ``{}``,
    QuPath's root)."""
    if geometry is None:
        return None
    if not isinstance(geometry, dict):
        raise ValueError(f'{where}: expected a geometry object, got '
                         f'{type(geometry).__name__}')
    if not geometry.get('type'):
        return None
    parts = dict(points=[], polygons=[], lines=0)
    _collect(geometry, where, parts)
    plane = read_plane(geometry.get('plane'), f'{where}.plane')
    points, polygons, lines = parts['points'], parts['polygons'], parts['lines']
    if polygons:
        return Shape('polygons', [], polygons, plane, len(points) + lines)
    if lines:
        return Shape('lines', [], [], plane, len(points))
    return Shape('points' if points else 'empty', points, [], plane)


def read_plane(value, where):
    """``(z, t)`` of ``ImagePlane`` JSON ``{"c", "z", "t"}``."""
    if value is None:
        return 0, 0
    if not isinstance(value, dict):
        raise ValueError(f'{where}: expected an object {{"c", "z", "t"}}, got '
                         f'{short(value)}')
    plane = []
    for key in ('z', 't'):
        number = value.get(key, 0)
        if not is_int(number):
            raise ValueError(f'{where}.{key}: expected an integer, got {short(number)}')
        plane.append(int(number))
    return tuple(plane)


def _collect(geometry, where, parts):
    """Add the points, polygons and line count of ``geometry`` to ``parts``."""
    kind = geometry.get('type')
    if kind not in GEOMETRY_TYPES:
        raise ValueError(f'{where}.type: unknown geometry type {kind!r}; expected one of '
                         f'{", ".join(GEOMETRY_TYPES)}')
    if kind == 'GeometryCollection':
        members = _list(geometry.get('geometries'), f'{where}.geometries',
                        'a list of geometries')
        for i, member in enumerate(members):
            if not isinstance(member, dict):
                raise ValueError(f'{where}.geometries[{i}]: expected a geometry object, '
                                 f'got {type(member).__name__}')
            _collect(member, f'{where}.geometries[{i}]', parts)
        return
    if 'coordinates' not in geometry:
        raise ValueError(f'{where}.coordinates: missing')
    coordinates, at = geometry['coordinates'], f'{where}.coordinates'
    if kind == 'Point':
        parts['points'].append(_position(coordinates, at))
    elif kind == 'MultiPoint':
        parts['points'].extend(_position(p, f'{at}[{i}]') for i, p in
                               enumerate(_list(coordinates, at, 'a list of positions')))
    elif kind in ('LineString', 'MultiLineString'):
        parts['lines'] += 1
    elif kind == 'Polygon':
        polygon = _polygon(coordinates, at)
        parts['polygons'].extend([polygon] if polygon else [])
    else:
        polygons = (_polygon(p, f'{at}[{i}]') for i, p in
                    enumerate(_list(coordinates, at, 'a list of polygons')))
        parts['polygons'].extend(p for p in polygons if p)


def _position(value, where):
    """``(x, y)`` of a GeoJSON position of finite numbers."""
    if not (isinstance(value, (list, tuple)) and len(value) >= 2 and all(
            isinstance(v, Real) and not isinstance(v, bool) for v in value[:2])):
        raise ValueError(f'{where}: expected a position [x, y] of numbers, got '
                         f'{short(value)}')
    x, y = float(value[0]), float(value[1])
    if not (math.isfinite(x) and math.isfinite(y)):
        raise ValueError(f'{where}: expected finite coordinates, got {short(value)}')
    return x, y


def _list(value, where, what):
    """``value`` when it is a JSON array; else an error expecting ``what``."""
    if not isinstance(value, (list, tuple)):
        raise ValueError(f'{where}: expected {what}, got {short(value)}')
    return value


def _ring(value, where):
    """A ring of at least 3 positions."""
    ring = [_position(p, f'{where}[{i}]')
            for i, p in enumerate(_list(value, where, 'a ring (list of positions)'))]
    if len(ring) < 3:
        raise ValueError(f'{where}: expected a ring of at least 3 positions, got '
                         f'{len(ring)}')
    return tuple(ring)


def _polygon(value, where):
    """``(exterior, holes)``, or ``None`` for an empty polygon (no rings)."""
    rings = _list(value, where, 'a list of rings')
    if not rings:
        return None
    exterior = _ring(rings[0], f'{where}[0]')
    holes = tuple(_ring(r, f'{where}[{i}]') for i, r in enumerate(rings[1:], start=1))
    return exterior, holes


def _number(value):
    """A measurement value as a float (QuPath's rules), or ``None`` if it is none."""
    if isinstance(value, Real) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        text = value.strip().lower()
        special = {'nan': math.nan, 'inf': math.inf, '-inf': -math.inf,
                   'infinity': math.inf, '-infinity': -math.inf}
        if text in special:
            return special[text]
        try:
            return float(text)
        except ValueError:
            return None
    return None


def read_score(measurements, where, notes):
    """The ``score`` measurement: ``None`` when missing or NaN; a value that is no
    number is noted in ``notes`` (a list)."""
    if isinstance(measurements, dict):
        if 'score' not in measurements:
            return None
        value = measurements['score']
    elif isinstance(measurements, list):
        value = next((m.get('value') for m in measurements
                      if isinstance(m, dict) and m.get('name') == 'score'), None)
    else:
        return None
    if value is None:
        return None
    number = _number(value)
    if number is None:
        notes.append(f'{where}: properties.measurements.score: {short(value)} is not a '
                     'number; no score')
        return None
    return None if math.isnan(number) else number
