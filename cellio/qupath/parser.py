"""Parse a QuPath export (QuPath 0.2-0.6) into cells, regions, ignored areas and
skipped features (:func:`parse_geojson`), on every plane and wherever they lie.

It follows QuPath's own parser (qupath-core ``io/PathIO``, ``io/GsonTools``,
``io/QuPathTypeAdapters`` (``io/PathObjectTypeAdapters`` before 0.4)); the fields of a
feature are read by :mod:`.fields` and its classification by :mod:`.classes`.

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

What each feature becomes (every feature is accounted for in
:class:`~.objects.QuPathFile`):

* A **cell** (:class:`~.objects.QuPathObject`): each point of a ``Point`` /
  ``MultiPoint`` (any object type), a ``box_size`` box centred on it; a detection or cell
  polygon, its bounding box (for a ``cell``, that of its ``nucleusGeometry`` when
  present); an annotation polygon whose :func:`~.classes.annotation_role` is ``cell``,
  its bounding box.
* A **region** (:class:`~.objects.Region`, the areas that were annotated) or an
  **ignored area** (QuPath's ``Ignore*`` and other ``*`` classes: to be left out): an
  annotation polygon by :func:`~.classes.annotation_role`, one per polygon of a
  ``MultiPolygon``.
* **Skipped** (:class:`~.objects.Skipped`, with the reason): lines (rulers), tiles, TMA
  cores and the root (their children are read), features without geometry or with an
  empty one, points and detections of an ignored or region class, polygons without
  area, detections larger than ``max_cell_size``, list items that are no feature.

Errors (``ValueError`` naming the file, the feature and the field): malformed JSON (line
and column), a geometry of unknown type, coordinates that are not finite numbers, rings
of fewer than 3 positions, properties / classification / plane of the wrong JSON type,
and (:class:`~.objects.AmbiguousClassError`) annotation polygons that would be cells but
are larger than ``max_cell_size``.
"""
import gzip
import json
import zipfile
import zlib
from collections import Counter
from pathlib import Path

from ..geometry import area_bounds
from .classes import annotation_role, class_names, is_ignored_class, is_region_class
from .fields import GEOMETRY_TYPES, read_geometry, read_score
from .naming import export_stem
from .objects import AmbiguousClassError, QuPathFile, QuPathObject, Region, Skipped

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
#: Notes kept per file (the rest are counted).
MAX_NOTES = 100


def parse_geojson(path, box_size: float = 32, cell_classes=None, region_classes=(),
                  base_class=False, max_cell_size=None, unclassified_polygons='region',
                  display=None) -> QuPathFile:
    """The cells, regions, ignored areas and skipped features of a QuPath export (module
    doc), on every plane, in QuPath's pixels.

    Args:
        path: a ``.geojson``, ``.json``, ``.geojson.gz``, ``.json.gz`` or ``.zip`` file.
        box_size: side of the square box centred on each point.
        cell_classes: the dataset's cell classes, or ``None``
            (:func:`~.classes.annotation_role`).
        region_classes: classes whose annotation polygons are regions.
        base_class: name a derived class by its base (first) name.
        max_cell_size: largest side (pixels) of a polygon cell; a detection or cell above
            it is skipped, an annotation polygon raises
            :class:`~.objects.AmbiguousClassError`. ``None``: no limit.
        unclassified_polygons: ``'region'`` (QuPath's convention) or ``'cell'``:
            unclassified annotation polygons up to ``max_cell_size`` are cells, larger ones
            regions.
        display: name of the file in messages (default: ``path``).

    Raises:
        ValueError: the file is not QuPath GeoJSON (the message names the file, the
            feature and the field).
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
    """The JSON of a file's bytes (gunzipped when ``file_name`` ends with ``.gz``)."""
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
    """What a JSON value that is no feature is, for messages."""
    if isinstance(content, dict):
        return f'an object with type {content.get("type")!r}'
    return type(content).__name__


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
        """Count and skip a list item that is no feature."""
        self.counts['not a feature'] += 1
        self.skip(fid, 'not a feature', f'not a GeoJSON Feature ({_describe(item)})')

    def read_feature(self, feature, fid):
        """One feature and, recursively, its child objects."""
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
        """The 0.4+ name of the feature's object type (module doc)."""
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
        """Record ``count`` objects of feature ``fid`` that become nothing."""
        self.result.skipped.append(Skipped(fid, object_type, reason, count))

    def read_object(self, feature, properties, object_type, fid, where):
        """What the feature itself (not its children) becomes: cells, areas or a skip."""
        if object_type in CONTAINER_TYPES:
            self.skip(fid, object_type, CONTAINER_TYPES[object_type])
            return
        shape = read_geometry(feature.get('geometry'), f'{where}: geometry')
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
        score = read_score(properties.get('measurements'), where, self.result.notes)
        context = (fid, object_type, shape.plane)
        if shape.kind == 'points':
            self.points(shape.points, label, score, context)
        elif object_type == 'annotation':
            self.annotation_polygons(shape, label, score, context)
        else:
            if object_type == 'cell' and feature.get('nucleusGeometry') is not None:
                shape = self.nucleus(feature['nucleusGeometry'], shape, where)
            self.detection(shape, label, score, context)

    def points(self, points, label, score, context):
        """One cell per point, unless the class cannot be a cell's."""
        fid, object_type, plane = context
        reason = self.cell_class_problem(label, 'point')
        if reason is not None:
            self.skip(fid, object_type, reason, len(points))
            return
        self.result.cells.extend(
            QuPathObject.at_point(x, y, self.box_size, label, score=score, feature=fid,
                                  object_type=object_type, plane=plane)
            for x, y in points)

    def cell_class_problem(self, label, what):
        """Why an object of class ``label`` cannot be a cell, or ``None``."""
        if label is None or (self.cell_classes is not None and label in self.cell_classes):
            return None
        if is_ignored_class(label):
            return f'ignored class {label!r}'
        if is_region_class(label):
            return f'region class {label!r} on a {what}'
        return None

    def annotation_polygons(self, shape, label, score, context):
        """A cell, or one region or ignored area per polygon, by the class's role."""
        fid, object_type, plane = context
        role = annotation_role(label, self.cell_classes, self.region_classes)
        box = area_bounds([exterior for exterior, _ in shape.polygons])
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
                 for exterior, holes in shape.polygons if area_bounds([exterior]) is not None]
        if not areas:
            self.skip(fid, object_type, 'polygon without area')
        target.extend(areas)

    def nucleus(self, geometry, shape, where):
        """The shape of a cell's nucleus, or ``shape`` (its outline) without one."""
        nucleus = read_geometry(geometry, f'{where}: nucleusGeometry')
        if nucleus is None or nucleus.kind != 'polygons':
            self.result.notes.append(f'{where}: nucleusGeometry is not a polygon; the cell '
                                     'outline is used')
            return shape
        return nucleus

    def detection(self, shape, label, score, context):
        """A detection or cell polygon: a cell, unless its class or size rule it out."""
        fid, object_type, plane = context
        reason = self.cell_class_problem(label, object_type)
        box = area_bounds([exterior for exterior, _ in shape.polygons])
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
        names, color = class_names(value, at, self.result.notes)
        if not names:
            return None, None
        if self.base_class:
            return names[0], None if len(names) > 1 else color
        return ': '.join(names), color
