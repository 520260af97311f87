"""Read and write QuPath GeoJSON (QuPath 0.2-0.6): cells, regions and ignored areas.

Coordinates are QuPath's: pixels of the full-resolution image, origin at its top-left
corner, boxes ``(x0, y0, x1, y1)``. :func:`read_geojson` adds ``offset`` to every
coordinate it returns, which maps QuPath's frame to the level-0 pixels of a slide that
QuPath crops to its OpenSlide bounds (:meth:`mmdet_pu.io.slides.SlideReader.qupath_frame`).

Reading (:func:`read_geojson`)
------------------------------
It follows QuPath's own parser (qupath-core ``io/PathIO``, ``io/GsonTools``,
``io/QuPathTypeAdapters`` (``io/PathObjectTypeAdapters`` before 0.4),
``io/ROITypeAdapters``, ``objects/classes/PathClass``, ``regions/ImagePlane``).

* **Files**: ``.geojson``, ``.json``, gzip ``.geojson.gz`` / ``.json.gz`` and ``.zip``
  (every ``.geojson`` / ``.json`` / ``.gz`` entry, in name order); UTF-8 with or without a
  BOM; the ``NaN`` / ``Infinity`` tokens QuPath's lenient JSON writes are numbers. The
  content is a ``FeatureCollection``, a ``Feature``, a bare geometry (an annotation, as
  QuPath reads it) or a list of these; other list items are skipped and reported.
* **Object type**: ``properties.objectType`` (0.4+), else ``object_type`` (0.3), else
  ``type`` (QuPath's alias), else the feature ``id`` when it is a 0.2 class name
  (``PathAnnotationObject``, ...), else ``annotation``. Values
  (:data:`OBJECT_TYPE_NAMES`): ``annotation``, ``detection``, ``cell``, ``tile``,
  ``tmaCore`` (0.3: ``tma_core``), ``root``; an unknown value is an annotation, as in
  QuPath, with a note. Child objects (``properties.childObjects`` or ``children``, from
  hierarchy exports) are read recursively: feature ``3.1`` is child 1 of feature 3.
* **Classification**: ``null`` or ``{}`` (unclassified); a string (``"Tumor: Positive"``);
  ``{"name": ..., "color": [r, g, b(, a)]}`` or ``{"names": [...], "color": ...}``
  (0.4+); ``{"name": ..., "colorRGB": <signed ARGB int>}`` with ``parentClass`` (the same
  form) for a derived class (0.2/0.3). A derived class is named ``"Parent: Child"``
  (QuPath's display name); ``base_class=True`` keeps its base (first) name. A colour
  that is not RGB/RGBA in 0..255 or a packed integer is dropped with a note.
* **Measurements**: a map (0.4+) or a list of ``{"name", "value"}`` (0.2/0.3), values
  numbers or strings (``"NaN"``, ``"Infinity"``, ``"-inf"``, numerals); only ``score``
  is read (``None`` when missing or NaN; a value that is no number is dropped with a
  note).
* **Geometry**: ``Point``, ``MultiPoint``, ``LineString``, ``MultiLineString``,
  ``Polygon``, ``MultiPolygon`` and ``GeometryCollection`` (``geometries``), which keeps,
  like QuPath's ``GeometryTools.homogenizeGeometryCollection``, only its parts of the
  highest dimension (polygons, else lines, else points; the others are noted);
  ``plane`` ``{"c", "z", "t"}`` (default ``z = t = 0``; ``c`` is ignored).

What each feature becomes (every feature is accounted for in :class:`QuPathFile`):

* A **cell** (:class:`QuPathObject`): each point of a ``Point`` / ``MultiPoint`` (any
  object type), a ``box_size`` box centred on it; a detection or cell polygon, its
  bounding box (for a ``cell``, that of its ``nucleusGeometry`` when present); an
  annotation polygon whose :func:`annotation_role` is ``cell``, its bounding box.
* A **region** (:class:`Region`, the areas that were annotated) or an **ignored area**
  (QuPath's ``Ignore*`` and other ``*`` classes: to be left out): an annotation polygon
  by :func:`annotation_role`, one per polygon of a ``MultiPolygon``.
* **Skipped** (:class:`Skipped`, with the reason): lines (rulers), tiles, TMA cores and
  the root (their children are read), features without geometry or with an empty one,
  points and detections of an ignored or region class, polygons without area, objects
  that lie outside ``image_size``, detections larger than ``max_cell_size``, objects of
  another plane than ``plane``, list items that are no feature.

Errors (``ValueError`` naming the file, the feature and the field): malformed JSON (line
and column), a geometry of unknown type, coordinates that are not finite numbers, rings
of fewer than 3 positions, properties / classification / plane of the wrong JSON type,
features on several planes without ``plane``, and (:class:`AmbiguousClassError`)
annotation polygons that would be cells but are larger than ``max_cell_size``.

Writing (:func:`write_geojson`)
-------------------------------
A ``FeatureCollection`` that QuPath 0.4+ imports (*File > Import objects from file*) and
0.3 reads too: per cell a closed ``Polygon`` ring of its box, ``objectType`` and (for 0.3)
``object_type``, ``classification`` ``{"name", "color": [r, g, b]}`` (QuPath 0.4+ needs
the colour), ``isLocked: false`` and the ``score`` as a measurement list
``[{"name": "score", "value": s}]``, the form every version reads. Written atomically;
:func:`read_geojson` gives back the same boxes, labels and scores.
"""
import colorsys
import gzip
import json
import math
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from numbers import Real
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .atomic import write_atomic

#: Every spelling QuPath reads -> the 0.4+ name (0.3: ``tma_core``; 0.2: the feature id).
OBJECT_TYPE_NAMES = {
    'annotation': 'annotation', 'unknown': 'annotation',
    'PathAnnotationObject': 'annotation',
    'detection': 'detection', 'PathDetectionObject': 'detection',
    'cell': 'cell', 'PathCellObject': 'cell',
    'tile': 'tile', 'PathTileObject': 'tile',
    'tmaCore': 'tmaCore', 'tma_core': 'tmaCore', 'TMACoreObject': 'tmaCore',
    'root': 'root', 'PathRootObject': 'root'}
#: QuPath 0.2 stored the object type as the feature's ``id``.
LEGACY_OBJECT_IDS = ('PathAnnotationObject', 'PathDetectionObject', 'PathCellObject',
                     'PathTileObject', 'TMACoreObject', 'PathRootObject')
#: Object types that are never cells or regions (their children are read).
CONTAINER_TYPES = {'tile': 'tile', 'tmaCore': 'TMA core', 'root': 'root object'}
#: Object types :func:`write_geojson` writes.
WRITABLE_TYPES = ('annotation', 'detection', 'cell')
#: Suffixes of QuPath object exports (``PathIO.readObjects``), longest first.
EXPORT_SUFFIXES = ('.geojson.gz', '.json.gz', '.geojson', '.json', '.zip')
#: Prefix (case-insensitive) of the annotation classes that mark regions (``Region*``).
REGION_CLASS_PREFIX = 'region'
#: QuPath's separator of the names of a derived class (``PathClass.DELIMITER``).
CLASS_DELIMITER = ':'

#: Notes kept per file (the rest are counted).
MAX_NOTES = 100
#: Points x ring edges compared at once by :meth:`Region.contains`.
_POINT_EDGE_PAIRS = 1 << 20

Box = Tuple[float, float, float, float]
Color = Tuple[int, int, int]
Plane = Tuple[int, int]


@dataclass(frozen=True)
class QuPathObject:
    """One cell.

    Attributes:
        box: ``(x0, y0, x1, y1)``.
        label: classification name, ``None`` if unclassified.
        score: the ``score`` measurement, ``None`` without one.
        point: ``(x, y)`` when the cell came from a point.
        feature: the feature it was read from, e.g. ``'3'`` or ``'3.1'`` (messages).
        object_type: ``annotation``, ``detection`` or ``cell``.
        plane: ``(z, t)``.

    Only ``box``, ``label``, ``score`` and ``point`` are compared.
    """
    box: Box
    label: Optional[str]
    score: Optional[float] = None
    point: Optional[Tuple[float, float]] = None
    feature: Optional[str] = field(default=None, compare=False)
    object_type: str = field(default='annotation', compare=False)
    plane: Plane = field(default=(0, 0), compare=False)


@dataclass(frozen=True)
class Region:
    """A region or ignored area: one polygon (exterior ring and holes).

    Attributes:
        exterior: the outer ring, ``((x, y), ...)``.
        holes: inner rings.
        label: its class (``None``, ``"Region*"``, ``"Ignore*"``, ...).
        feature: the feature it was read from (not compared).
        plane: ``(z, t)`` (not compared).
    """
    exterior: Tuple[Tuple[float, float], ...]
    holes: Tuple[Tuple[Tuple[float, float], ...], ...] = ()
    label: Optional[str] = None
    feature: Optional[str] = field(default=None, compare=False)
    plane: Plane = field(default=(0, 0), compare=False)

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
            ring = np.asarray(ring, dtype=np.float64)
            step = max(1, _POINT_EDGE_PAIRS // len(ring))  # bounded memory
            for start in range(0, len(points), step):
                inside[start:start + step] ^= _crosses_odd(points[start:start + step], ring)
        return inside

    def pixel_mask(self, x, y, width, height) -> np.ndarray:
        """``(height, width)`` bool: the pixels of the window at ``(x, y)`` whose centre
        lies inside (the rule of :meth:`contains`), one image row at a time."""
        edges = np.concatenate([
            np.concatenate([ring, np.roll(ring, -1, axis=0)], axis=1)
            for ring in (np.asarray(r, dtype=np.float64)
                         for r in (self.exterior, *self.holes))])
        x1, y1, x2, y2 = edges.T
        centres_x = x + 0.5 + np.arange(width)
        mask = np.zeros((height, width), dtype=bool)
        for row in range(height):
            cy = y + 0.5 + row
            straddles = (y1 > cy) != (y2 > cy)
            if not straddles.any():
                continue
            a, b, c, d = x1[straddles], y1[straddles], x2[straddles], y2[straddles]
            crossings = np.sort(a + (cy - b) * (c - a) / (d - b))
            right = len(crossings) - np.searchsorted(crossings, centres_x, side='right')
            mask[row] = right % 2 == 1
        return mask


def _crosses_odd(points, ring):
    """Whether a ray from each point towards +x crosses ``ring`` an odd number of times."""
    x, y = points[:, :1], points[:, 1:]
    x1, y1 = ring[:, 0], ring[:, 1]
    x2, y2 = np.roll(ring[:, 0], -1), np.roll(ring[:, 1], -1)
    straddles = (y1 > y) != (y2 > y)
    dy = np.where(y2 == y1, 1.0, y2 - y1)  # horizontal edges never straddle
    x_cross = x1 + (y - y1) * (x2 - x1) / dy
    return (straddles & (x < x_cross)).sum(axis=1) % 2 == 1


@dataclass(frozen=True)
class Skipped:
    """Objects of one feature that became nothing.

    Attributes:
        feature: the feature, e.g. ``'3'``.
        object_type: its object type (``'not a feature'`` for list items that are none).
        reason: why, e.g. ``'line (ruler)'`` or ``"ignored class 'Ignore*'"``.
        count: objects skipped: the points of a multi-point, else 1.
    """
    feature: str
    object_type: str
    reason: str
    count: int = 1


@dataclass
class QuPathFile:
    """What :func:`read_geojson` found in one export.

    Attributes:
        cells: the cells, in file order (a multi-point gives one cell per point).
        regions: the regions, in file order.
        ignored_areas: the areas to leave out (``Ignore*`` and other ``*`` classes).
        skipped: the features (or points) that became nothing, with the reason.
        colors: class name -> RGB of every classification with a colour.
        features: number of features per object type (children included).
        notes: things read leniently (unknown object type, bad colour, ...).
        planes: the ``(z, t)`` planes of the features with a geometry, sorted.
    """
    cells: List[QuPathObject] = field(default_factory=list)
    regions: List[Region] = field(default_factory=list)
    ignored_areas: List[Region] = field(default_factory=list)
    skipped: List[Skipped] = field(default_factory=list)
    colors: Dict[str, Color] = field(default_factory=dict)
    features: Dict[str, int] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    planes: List[Plane] = field(default_factory=list)


class AmbiguousClassError(ValueError):
    """Annotation polygons that would be cells are larger than a cell.

    Attributes:
        display: the file.
        oversized: ``{class: [(feature, width, height), ...]}``.
        max_cell_size: the limit.
    """

    def __init__(self, display, oversized, max_cell_size):
        self.display, self.oversized, self.max_cell_size = display, oversized, max_cell_size
        super().__init__(f'{display}: {describe_oversized(oversized)} would be cells but '
                         f'are larger than a cell (max_cell_size {max_cell_size:g} px): '
                         'regions (region_classes) or cells (a larger max_cell_size)?')


def describe_oversized(oversized):
    """``class 'Tumor': 2 annotation polygon(s) (feature 3: 5000x4000 px, ...)``."""
    parts = []
    for label in sorted(oversized):
        feature, width, height = oversized[label][0]
        more = ', ...' if len(oversized[label]) > 1 else ''
        parts.append(f'class {label!r}: {len(oversized[label])} annotation polygon(s) '
                     f'(feature {feature}: {width:g}x{height:g} px{more})')
    return '; '.join(parts)


def is_region_class(label) -> bool:
    """Whether ``label`` names a region class: it starts with ``Region`` (any case),
    like QuPath's built-in ``Region*``."""
    return label is not None and label.lower().startswith(REGION_CLASS_PREFIX)


def is_ignored_class(label) -> bool:
    """QuPath's ``PathClassTools.isIgnoredClass`` for a classified object: the class's
    own (last) name ends with ``*`` (``Ignore*``, ``Artefact*``, ...); region classes
    (:func:`is_region_class`) are not ignored."""
    return (label is not None and not is_region_class(label)
            and label.split(CLASS_DELIMITER)[-1].strip().endswith('*'))


def annotation_role(label, cell_classes=None, region_classes=()) -> str:
    """What an annotation polygon of class ``label`` is: ``'region'``, ``'ignored'`` (an
    area to leave out) or ``'cell'``.

    In order: unclassified or in ``region_classes``: region; in ``cell_classes``: cell;
    a region class (``Region*``): region; an ignored class (``Ignore*``, any name
    ending with ``*``): ignored; with ``cell_classes`` given, any other class: region;
    without, any other class: cell.
    """
    if label is None or label in region_classes:
        return 'region'
    if cell_classes is not None and label in cell_classes:
        return 'cell'
    if is_region_class(label):
        return 'region'
    if is_ignored_class(label):
        return 'ignored'
    return 'region' if cell_classes is not None else 'cell'


def default_color(name) -> Color:
    """A stable colour for a class without one: a hue from the CRC32 of its name."""
    hue = (zlib.crc32(str(name).encode('utf-8')) % 360) / 360.0
    return tuple(int(round(255 * c)) for c in colorsys.hsv_to_rgb(hue, 0.75, 0.9))


def export_stem(name) -> Optional[str]:
    """``name`` without its export suffix (:data:`EXPORT_SUFFIXES`, any case), ``None``
    when it has none."""
    lower = name.lower()
    for suffix in EXPORT_SUFFIXES:
        if lower.endswith(suffix) and len(name) > len(suffix):
            return name[:-len(suffix)]
    return None


# ------------------------------------------------------------------------- reading --

def read_geojson(path, box_size: float = 32, cell_classes=None, region_classes=(),
                 image_size=None, offset=(0, 0), base_class=False, max_cell_size=None,
                 unclassified_polygons='region', plane=None, display=None) -> QuPathFile:
    """Read the cells, regions and ignored areas of a QuPath export (module doc).

    Args:
        path: a ``.geojson``, ``.json``, ``.geojson.gz``, ``.json.gz`` or ``.zip`` file.
        box_size: side of the square box centred on each point.
        cell_classes: the dataset's cell classes, or ``None``
            (:func:`annotation_role`).
        region_classes: classes whose annotation polygons are regions.
        image_size: ``(width, height)`` of the image in QuPath's frame; objects that lie
            outside it are skipped. ``None``: no check.
        offset: ``(x, y)`` added to every coordinate returned (QuPath's origin in level-0
            pixels).
        base_class: name a derived class by its base (first) name.
        max_cell_size: largest side (pixels) of a polygon cell; a detection or cell above
            it is skipped, an annotation polygon raises :class:`AmbiguousClassError`.
            ``None``: no limit.
        unclassified_polygons: ``'region'`` (QuPath's convention) or ``'cell'``:
            unclassified annotation polygons up to ``max_cell_size`` are cells, larger ones
            regions.
        plane: ``(z, t)`` to read; objects of other planes are skipped. ``None``: every
            feature must lie on one plane.
        display: name of the file in messages (default: ``path``).

    Raises:
        ValueError: the file is not QuPath GeoJSON (the message names the file, the
            feature and the field), or its features lie on several planes and ``plane`` is
            ``None``.
        AmbiguousClassError: annotation polygons too large for the cells they would be.
    """
    if not box_size > 0:
        raise ValueError(f'box_size must be positive, got {box_size}')
    if unclassified_polygons not in ('region', 'cell'):
        raise ValueError(f"unclassified_polygons must be 'region' or 'cell', got "
                         f'{unclassified_polygons!r}')
    path = Path(path)
    name = str(path) if display is None else display
    reader = _FileReader(name, box_size, None if cell_classes is None else set(cell_classes),
                         set(region_classes), base_class, max_cell_size,
                         unclassified_polygons)
    for prefix, content in _documents(path, name):
        reader.read_document(content, prefix)
    result = reader.result
    result.features = dict(reader.counts)
    if len(result.notes) > MAX_NOTES:
        more = len(result.notes) - MAX_NOTES
        result.notes[MAX_NOTES:] = [f'{name}: ... and {more} more note(s) like these']
    if reader.oversized:
        raise AmbiguousClassError(name, reader.oversized, max_cell_size)
    result.planes = sorted(reader.planes)
    _select_plane(result, plane, name)
    if image_size is not None:
        _drop_outside(result, image_size)
    if tuple(offset) != (0, 0):
        _shift(result, *offset)
    return result


def _documents(path, name):
    """``[(feature id prefix, parsed JSON), ...]`` of an export file."""
    lower = path.name.lower()
    if lower.endswith('.zip'):
        try:
            with zipfile.ZipFile(path) as archive:
                entries = sorted(info.filename for info in archive.infolist()
                                 if not info.is_dir() and export_stem(
                                     info.filename.rsplit('/', 1)[-1]) is not None
                                 and not info.filename.lower().endswith('.zip'))
                if not entries:
                    raise ValueError(f'{name}: the zip archive holds no .geojson or .json '
                                     'entry')
                return [(f'{entry}:' if len(entries) > 1 else '',
                         _parse_json(archive.read(entry), f'{name}:{entry}', entry))
                        for entry in entries]
        except (zipfile.BadZipFile, zlib.error) as err:
            raise ValueError(f'{name}: not a readable zip archive ({err})') from err
    return [('', _parse_json(path.read_bytes(), name, path.name))]


def _parse_json(data, name, file_name):
    if file_name.lower().endswith('.gz'):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:
            raise ValueError(f'{name}: not a readable gzip file ({err})') from err
    try:
        text = data.decode('utf-8-sig')
    except UnicodeDecodeError as err:
        raise ValueError(f'{name}: not a UTF-8 text file ({err})') from err
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f'{name} line {err.lineno} column {err.colno}: not valid JSON '
                         f'({err.msg})') from err


def _describe(content):
    if isinstance(content, dict):
        return f'an object with type {content.get("type")!r}'
    return type(content).__name__


GEOMETRY_TYPES = ('Point', 'MultiPoint', 'LineString', 'MultiLineString', 'Polygon',
                  'MultiPolygon', 'GeometryCollection')


class _FileReader:
    """Reads the features of one export into a :class:`QuPathFile`."""

    def __init__(self, name, box_size, cell_classes, region_classes, base_class,
                 max_cell_size, unclassified_polygons):
        self.name, self.box_size = name, box_size
        self.cell_classes, self.region_classes = cell_classes, region_classes
        self.base_class, self.max_cell_size = base_class, max_cell_size
        self.unclassified_polygons = unclassified_polygons
        self.result = QuPathFile()
        self.counts = Counter()
        self.oversized = {}
        self.planes = set()

    # ---------------------------------------------------------------- structure --
    def read_document(self, content, prefix):
        """A parsed file: a FeatureCollection, a Feature, a geometry or a list."""
        if isinstance(content, list):
            self.read_list(content, prefix)
        elif isinstance(content, dict) and content.get('type') == 'FeatureCollection':
            features = content.get('features')
            if not isinstance(features, list):
                raise ValueError(f'{self.name}: features: expected a list of features in '
                                 'the FeatureCollection')
            for index, item in enumerate(features):
                self.read_feature(item, f'{prefix}{index}')
        elif isinstance(content, dict) and content.get('type') == 'Feature':
            self.read_feature(content, f'{prefix}0')
        elif isinstance(content, dict) and content.get('type') in GEOMETRY_TYPES:
            self.read_feature(dict(type='Feature', geometry=content), f'{prefix}0')
        else:
            raise ValueError(f'{self.name}: expected a GeoJSON FeatureCollection, a '
                             f'Feature, a geometry or a list of them, got '
                             f'{_describe(content)}')

    def read_list(self, items, prefix):
        """QuPath reads each item of a list as a file's content; others are skipped."""
        for index, item in enumerate(items):
            fid = f'{prefix}{index}'
            if isinstance(item, list):
                self.read_list(item, f'{fid}.')
            elif isinstance(item, dict) and item.get('type') == 'FeatureCollection':
                self.read_document(item, f'{fid}.')
            elif isinstance(item, dict) and item.get('type') in GEOMETRY_TYPES:
                self.read_feature(dict(type='Feature', geometry=item), fid)
            elif isinstance(item, dict) and item.get('type', 'Feature') == 'Feature':
                self.read_feature(item, fid)
            else:
                self.not_a_feature(item, fid)

    def not_a_feature(self, item, fid):
        self.counts['not a feature'] += 1
        self.skip(fid, 'not a feature', f'not a GeoJSON Feature ({_describe(item)})')

    def read_feature(self, feature, fid):
        where = f'{self.name} feature {fid}'
        if not isinstance(feature, dict):
            self.not_a_feature(feature, fid)
            return
        properties = feature.get('properties')
        if properties is None:
            properties = {}
        if not isinstance(properties, dict):
            raise ValueError(f'{where}: properties: expected an object, got '
                             f'{type(properties).__name__}')
        object_type = self.object_type(feature, properties, where)
        self.counts[object_type] += 1
        self.read_object(feature, properties, object_type, fid, where)
        children = properties.get('childObjects', properties.get('children'))
        if isinstance(children, list):
            for index, child in enumerate(children):
                self.read_feature(child, f'{fid}.{index}')

    def object_type(self, feature, properties, where):
        for key in ('objectType', 'object_type', 'type'):
            if key in properties:
                value = properties[key]
                break
        else:
            legacy = feature.get('id')
            value = legacy if isinstance(legacy, str) and legacy in LEGACY_OBJECT_IDS \
                else 'unknown'
        if not isinstance(value, str) or value not in OBJECT_TYPE_NAMES:
            self.result.notes.append(f'{where}: unknown object type {value!r} read as an '
                                     'annotation, as QuPath does')
            return 'annotation'
        return OBJECT_TYPE_NAMES[value]

    # ----------------------------------------------------------------- objects --
    def skip(self, fid, object_type, reason, count=1):
        self.result.skipped.append(Skipped(fid, object_type, reason, count))

    def read_object(self, feature, properties, object_type, fid, where):
        if object_type in CONTAINER_TYPES:
            self.skip(fid, object_type, CONTAINER_TYPES[object_type])
            return
        shape = _geometry(feature.get('geometry'), f'{where}: geometry')
        if shape is None:
            self.skip(fid, object_type, 'no geometry')
            return
        self.planes.add(shape.plane)
        if shape.discarded:
            self.result.notes.append(
                f'{where}: {shape.discarded} lower-dimension part(s) of a '
                f'GeometryCollection dropped (QuPath keeps only its {shape.kind})')
        if shape.kind in ('empty', 'lines'):
            self.skip(fid, object_type,
                      'empty geometry' if shape.kind == 'empty' else 'line (ruler)')
            return
        label, color = self.classification(properties.get('classification'), where)
        if label is not None and color is not None:
            self.result.colors.setdefault(label, color)
        score = _score(properties.get('measurements'), where, self.result.notes)
        context = (fid, object_type, shape.plane)
        if shape.kind == 'points':
            self.points(shape.points, label, score, context)
        elif object_type == 'annotation':
            self.annotation_polygons(shape, label, score, context, where)
        else:
            if object_type == 'cell' and feature.get('nucleusGeometry') is not None:
                shape = self.nucleus(feature['nucleusGeometry'], shape, where)
            self.detection(shape, label, score, context)

    def points(self, points, label, score, context):
        fid, object_type, plane = context
        reason = self.cell_class_problem(label, 'point')
        if reason is not None:
            self.skip(fid, object_type, reason, len(points))
            return
        half = self.box_size / 2
        for x, y in points:
            self.result.cells.append(QuPathObject(
                (x - half, y - half, x + half, y + half), label, score, (x, y), fid,
                object_type, plane))

    def cell_class_problem(self, label, what):
        """Why an object of class ``label`` cannot be a cell, or ``None``."""
        if label is None or (self.cell_classes is not None and label in self.cell_classes):
            return None
        if is_ignored_class(label):
            return f'ignored class {label!r}'
        if is_region_class(label):
            return f'region class {label!r} on a {what}'
        return None

    def annotation_polygons(self, shape, label, score, context, where):
        fid, object_type, plane = context
        role = annotation_role(label, self.cell_classes, self.region_classes)
        box = _bounds([exterior for exterior, _ in shape.polygons])
        size = None if box is None else max(box[2] - box[0], box[3] - box[1])
        fits = self.max_cell_size is None or (size is not None and size <= self.max_cell_size)
        if label is None and self.unclassified_polygons == 'cell' and fits:
            role = 'cell'
        if role == 'cell':
            if box is None:
                self.skip(fid, object_type, 'polygon without area')
            elif not fits:
                self.oversized.setdefault(label, []).append(
                    (fid, box[2] - box[0], box[3] - box[1]))
            else:
                self.result.cells.append(QuPathObject(box, label, score, None, fid,
                                                      object_type, plane))
            return
        target = self.result.regions if role == 'region' else self.result.ignored_areas
        areas = [Region(exterior, holes, label, fid, plane)
                 for exterior, holes in shape.polygons if _bounds([exterior]) is not None]
        if not areas:
            self.skip(fid, object_type, 'polygon without area')
        target.extend(areas)

    def nucleus(self, geometry, shape, where):
        nucleus = _geometry(geometry, f'{where}: nucleusGeometry')
        if nucleus is None or nucleus.kind != 'polygons':
            self.result.notes.append(f'{where}: nucleusGeometry is not a polygon; the cell '
                                     'outline is used')
            return shape
        return nucleus

    def detection(self, shape, label, score, context):
        fid, object_type, plane = context
        reason = self.cell_class_problem(label, object_type)
        box = _bounds([exterior for exterior, _ in shape.polygons])
        if reason is None and box is None:
            reason = 'polygon without area'
        if reason is None and self.max_cell_size is not None and \
                max(box[2] - box[0], box[3] - box[1]) > self.max_cell_size:
            reason = f'larger than a cell (max_cell_size {self.max_cell_size:g} px)'
        if reason is not None:
            self.skip(fid, object_type, reason)
            return
        self.result.cells.append(QuPathObject(box, label, score, None, fid, object_type,
                                              plane))

    # ----------------------------------------------------------- classification --
    def classification(self, value, where):
        """``(label, rgb or None)``; ``(None, None)`` if unclassified."""
        at = f'{where}: properties.classification'
        names, color = _class_names(value, at, self.result.notes)
        if not names:
            return None, None
        if self.base_class:
            return names[0], None if len(names) > 1 else color
        return ': '.join(names), color


def _split_names(text):
    """``PathClass.fromString``: the names of ``'Tumor: Positive'``, stripped."""
    names = tuple(name.strip() for name in text.split(CLASS_DELIMITER))
    return () if not any(names) else tuple(name for name in names if name)


def _class_names(value, at, notes):
    """``(names, rgb or None)`` of a classification in any of QuPath's forms."""
    if value is None:
        return (), None
    if isinstance(value, str):
        return _split_names(value), None
    if not isinstance(value, dict):
        raise ValueError(f'{at}: expected an object or a string, got '
                         f'{type(value).__name__}')
    if not value:
        return (), None  # QuPath's serialised NULL_CLASS: unclassified
    if 'colorRGB' in value or 'parentClass' in value:  # 0.2/0.3: the PathClass fields
        parent = value.get('parentClass')
        names = _class_names(parent, f'{at}.parentClass', notes)[0] if parent else ()
        name = value.get('name')
        if name is not None and not isinstance(name, str):
            raise ValueError(f'{at}.name: expected a string, got {name!r}')
        names += _split_names(name) if name else ()
        return names, _packed_color(value.get('colorRGB'), f'{at}.colorRGB', notes)
    name, names = value.get('name'), value.get('names')
    if isinstance(name, str):
        parsed = _split_names(name)
    elif isinstance(names, list) and all(isinstance(n, str) for n in names):
        parsed = tuple(n.strip() for n in names if n.strip())
    elif name is None and names is None:
        parsed = ()  # QuPath's PathClassProxy without names: unclassified
    else:
        raise ValueError(f'{at}: expected a "name" string or a "names" list of strings, '
                         f'got {_short(value)}')
    return parsed, _color(value.get('color'), f'{at}.color', notes)


def _is_int(value):
    return (isinstance(value, Real) and not isinstance(value, bool)
            and math.isfinite(value) and float(value) == int(value))


def _color(value, at, notes):
    """RGB of ``[r, g, b]``, ``[r, g, b, a]`` (alpha last) or a packed integer."""
    if value is None:
        return None
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if _is_int(value):
        return _packed_color(value, at, notes)
    if isinstance(value, list) and len(value) in (3, 4) and all(
            _is_int(c) and 0 <= c <= 255 for c in value):
        return tuple(int(c) for c in value[:3])
    notes.append(f'{at}: {_short(value)} is not [r, g, b(, a)] in 0..255; colour ignored')
    return None


def _packed_color(value, at, notes):
    if value is None:
        return None
    if not _is_int(value):
        notes.append(f'{at}: {_short(value)} is not a packed colour integer; ignored')
        return None
    packed = int(value)
    return (packed >> 16) & 255, (packed >> 8) & 255, packed & 255


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


def _score(measurements, where, notes):
    """The ``score`` measurement: ``None`` when missing or NaN."""
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
        notes.append(f'{where}: properties.measurements.score: {_short(value)} is not a '
                     'number; no score')
        return None
    return None if math.isnan(number) else number


# ----------------------------------------------------------------------- geometry --

@dataclass
class _Shape:
    kind: str                  # 'points', 'polygons', 'lines' or 'empty'
    points: list
    polygons: list             # [(exterior, holes), ...]
    plane: Plane
    discarded: int = 0         # lower-dimension parts of a GeometryCollection


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
    """``(exterior, holes)``, or ``None`` for an empty polygon (no rings)."""
    rings = _list(value, where, 'a list of rings')
    if not rings:
        return None
    exterior = _ring(rings[0], f'{where}[0]')
    holes = tuple(_ring(r, f'{where}[{i}]') for i, r in enumerate(rings[1:], start=1))
    return exterior, holes


def _plane(value, where):
    """``(z, t)`` of ``ImagePlane`` JSON ``{"c", "z", "t"}``."""
    if value is None:
        return 0, 0
    if not isinstance(value, dict):
        raise ValueError(f'{where}: expected an object {{"c", "z", "t"}}, got '
                         f'{_short(value)}')
    plane = []
    for key in ('z', 't'):
        number = value.get(key, 0)
        if not _is_int(number):
            raise ValueError(f'{where}.{key}: expected an integer, got {_short(number)}')
        plane.append(int(number))
    return tuple(plane)


def _geometry(geometry, where):
    """The :class:`_Shape` of a geometry, ``None`` if there is none (``null`` or ``{}``,
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
    plane = _plane(geometry.get('plane'), f'{where}.plane')
    points, polygons, lines = parts['points'], parts['polygons'], parts['lines']
    if polygons:
        return _Shape('polygons', [], polygons, plane, len(points) + lines)
    if lines:
        return _Shape('lines', [], [], plane, len(points))
    return _Shape('points' if points else 'empty', points, [], plane)


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


def _bounds(rings) -> Optional[Box]:
    """Bounding box of rings, ``None`` when it has no area."""
    points = np.concatenate([np.asarray(r, dtype=np.float64) for r in rings])
    x0, y0 = points.min(axis=0)
    x1, y1 = points.max(axis=0)
    if not (x1 > x0 and y1 > y0):
        return None
    return float(x0), float(y0), float(x1), float(y1)


# ------------------------------------------------------------- planes and image --

def _select_plane(result, plane, name):
    if plane is None:
        if len(result.planes) > 1:
            listed = ', '.join(f'z={z},t={t}' for z, t in result.planes)
            raise ValueError(f'{name}: the objects lie on {len(result.planes)} planes '
                             f'({listed}); choose one (plane=(z, t); prepare.py qupath: '
                             '--plane z,t)')
        return
    plane = tuple(plane)
    _filter(result, lambda cell: cell.plane == plane, lambda area: area.plane == plane,
            lambda item: f'on plane z={item.plane[0]},t={item.plane[1]} (not the chosen '
                         f'z={plane[0]},t={plane[1]})')


def _inside(box, width, height):
    x0, y0, x1, y1 = box
    return x0 < width and y0 < height and x1 > 0 and y1 > 0


def _drop_outside(result, image_size):
    """Skip the objects that lie outside the ``width x height`` image."""
    width, height = image_size

    def cell_inside(cell):
        if cell.point is None:
            return _inside(cell.box, width, height)
        x, y = cell.point
        return 0 <= x < width and 0 <= y < height

    _filter(result, cell_inside, lambda area: _inside(area.bounds, width, height),
            lambda item: 'outside the image')


def _filter(result, keep_cell, keep_area, reason):
    """Move the cells and areas that fail ``keep_*`` to ``skipped`` (one entry per cell,
    one per feature whose areas all fail), with ``reason(item)``."""
    kept = []
    for cell in result.cells:
        if keep_cell(cell):
            kept.append(cell)
        else:
            result.skipped.append(Skipped(cell.feature, cell.object_type, reason(cell)))
    result.cells = kept
    for attribute in ('regions', 'ignored_areas'):
        areas = getattr(result, attribute)
        kept = [area for area in areas if keep_area(area)]
        setattr(result, attribute, kept)
        features = {area.feature for area in kept}
        for area in areas:
            if area.feature not in features:
                features.add(area.feature)
                result.skipped.append(Skipped(area.feature, 'annotation', reason(area)))


def _shift(result, dx, dy):
    def ring(points):
        return tuple((x + dx, y + dy) for x, y in points)

    result.cells = [QuPathObject(
        (c.box[0] + dx, c.box[1] + dy, c.box[2] + dx, c.box[3] + dy), c.label, c.score,
        None if c.point is None else (c.point[0] + dx, c.point[1] + dy), c.feature,
        c.object_type, c.plane) for c in result.cells]
    for attribute in ('regions', 'ignored_areas'):
        setattr(result, attribute, [
            Region(ring(a.exterior), tuple(ring(h) for h in a.holes), a.label, a.feature,
                   a.plane) for a in getattr(result, attribute)])


def _short(value, limit=60):
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + '...'


# ------------------------------------------------------------------------- writing --

def write_geojson(path, cells: Sequence[QuPathObject], colors: Mapping[str, Color],
                  object_type: str = 'detection') -> None:
    """Write ``cells`` as a QuPath FeatureCollection (module doc), atomically.

    Args:
        path: output ``.geojson`` file (parent directories are created); it appears
            complete or not at all.
        cells: the cells; each becomes a closed Polygon ring of its box.
        colors: class name -> RGB; a class without one gets :func:`default_color`.
        object_type: ``detection`` (model output), ``annotation`` or ``cell``. (An
            unclassified ``annotation`` rectangle reads back as a region, not a cell.)
    """
    if object_type not in WRITABLE_TYPES:
        raise ValueError(f'object_type must be one of {", ".join(WRITABLE_TYPES)}, got '
                         f'{object_type!r}')
    features = [_feature(cell, i, colors, object_type) for i, cell in enumerate(cells)]
    write_atomic(path, json.dumps(dict(type='FeatureCollection', features=features),
                                  allow_nan=False))


def _feature(cell, index, colors, object_type):
    x0, y0, x1, y1 = (float(v) for v in cell.box)
    if not (math.isfinite(x0 + y0 + x1 + y1) and x1 > x0 and y1 > y0):
        raise ValueError(f'cell {index}: box {list(cell.box)} must be finite with '
                         'x1 > x0 and y1 > y0')
    properties = dict(objectType=object_type, object_type=object_type)
    if cell.label is not None:
        color = colors.get(cell.label) or default_color(cell.label)
        properties['classification'] = dict(name=str(cell.label),
                                            color=[int(c) for c in color])
    properties['isLocked'] = False
    if cell.score is not None:
        properties['measurements'] = [dict(name='score', value=float(cell.score))]
    ring = [[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]
    return dict(type='Feature', geometry=dict(type='Polygon', coordinates=[ring]),
                properties=properties)
