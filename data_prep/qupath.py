"""Partially annotated user data (QuPath exports or a CSV of points) -> tiled COCO files.

Input (``--src DIR``, only read)::

    DIR/**/<name>.png|.jpg|.bmp|.tif|.ome.tif|.svs|.ndpi|.mrxs|...   images and slides
    DIR/**/<stem>.geojson|.json|.geojson.gz|.json.gz|.zip            QuPath export of each

Matching. An export belongs to the image in its folder whose name without extension is
the export's stem, by QuPath's rule (``GeneralTools.stripExtension``: ``x.ome.tif``,
``x.ome.tiff`` and ``x.ome.zarr`` lose the whole multi-part extension, so *Export
objects* proposes ``x.geojson``), by the plain last suffix (``x.ome.geojson``) or is
its whole name (``x.svs.geojson``, what a script that appends ``.geojson`` writes). Images
without an export are skipped and counted; a ``.geojson`` (``.gz``) without its image,
an export matching two images and an image with two exports are errors; a ``.json`` or
``.zip`` matching no image is listed as unused (QuPath project folders hold other JSON).
The GeoJSON rules (every form QuPath 0.2-0.6 writes) are those of
:mod:`mmdet_pu.io.qupath`. With ``--csv FILE`` (header ``image,x,y[,class]``, ``image``
= path relative to DIR, other columns ignored) the images named in the CSV are read
instead, each row a point; exports are then not read.

Pixels and coordinates. PNG / JPEG / BMP through
:class:`mmdet_pu.io.images.LazyImageReader`; TIFFs and whole slides through
:func:`mmdet_pu.io.slides.open_level_regions` at level 0 (opened lazily), the reader of
whole-slide inference, which also gives their ``mpp`` (written on every image entry).
Exports are in QuPath's frame (:meth:`~mmdet_pu.io.slides.SlideReader.qupath_frame`): on
a slide with ``openslide.bounds-*`` (MIRAX) QuPath's origin is the bounds' corner and
its image the bounds, so coordinates are shifted by it into level-0 pixels of the file
(``--frame level0`` for a slide QuPath opened with Bio-Formats or ``--no-crop``); objects
outside QuPath's image are skipped and reported. The readers are imported from
``mmdet_pu`` by the functions that read files, so ``prepare.py qupath -h`` stays light.

Roles (see :func:`mmdet_pu.io.qupath.annotation_role`):

* Cells: points, detections, cells and cell-class annotation polygons. An annotation
  polygon larger than ``--max-cell-size`` that would be a cell is ambiguous (an area of
  that class?): the run stops, naming the files, classes and the fix
  (``--region-classes`` or a larger ``--max-cell-size``).
* Regions: unclassified and ``Region*`` annotation polygons, those of
  ``--region-classes`` and, with ``--classes``, of every class not listed. With
  ``--derive-regions M`` an image without a drawn region gets one box per cell grown by
  ``M`` pixels (overlapping boxes merge).
* Ignored areas (``Ignore*`` and other ``*`` classes except ``Region*``): left out like
  the outside of the regions: their cells are dropped and their pixels painted white
  (glass) in every image written.

Classes. ``--classes a,b`` selects and orders the classes (a listed class that no cell
has is an error; cells of other classes are skipped). Without it, every cell class,
sorted. Derived classes are ``Parent: Child`` (``--base-class``: ``Parent``).
Unclassified cells (QuPath's calibration points, ...) are skipped when any cell is
classified, unless ``--unclassified-class NAME`` makes them a class; when no cell is
classified they are the one class ``NAME`` (default ``cell``). COCO categories carry
``color`` ([r, g, b]) from the classifications
(:func:`mmdet_pu.io.qupath.default_color` for classes without one).

Images written. Each region's bounding box is clipped to QuPath's image, rounded
outwards to whole pixels, overlapping boxes are merged, and each such *crop* becomes one
:class:`~data_prep.writer.SourceImage` with ``source`` = the raw image path and
``origin`` = its level-0 corner, so every image entry's ``source`` + ``x0``, ``y0``
locates it in the raw file (an image without regions is written whole, ``origin`` the
frame's corner when QuPath crops it). A cell belongs to the crop containing its point
(box centre for polygons); cells outside every region polygon are counted
(``outside_regions``) and kept when they fall in a crop, skipped otherwise. A crop may
not exceed :data:`mmdet_pu.io.images.MAX_WHOLE_PIXELS` pixels (test crops are written
whole). Boxes: a ``--box-size`` box centred on each point, the bounding box of each
polygon; a crop whose cells are all points gives the writer points.

Splits: 4:1:1 by image, or by slide with ``--group-regex`` (its first group, searched in
the image path, is the slide key); when there are too few images (or slides) for the
split, its regions are split instead, with a warning. A run that writes no cell is an
error that names every file and what became of its features.

Report: for each export the features by object type and what became of each (``cell:
<class>``, ``region``, ``ignored area``, ``skipped: <reason>``; a multi-point counts one
object per point) is printed and written to ``OUT/qupath_report.json``.
"""
import csv
import json
import math
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Optional, Tuple

import numpy as np

from data_prep.splits import split_groups
from data_prep.writer import SourceImage, add_common_arguments, write_dataset
from mmdet_pu.io.atomic import AtomicOutput, write_json_atomic
from mmdet_pu.io.images import MAX_WHOLE_PIXELS, LazyImageReader, image_size
from mmdet_pu.io.slides import OPENSLIDE_SUFFIXES, open_level_regions, open_slide
from mmdet_pu.io.tiff import TIFF_SUFFIXES

#: Ordinary images, decoded whole by OpenCV.
PLAIN_SUFFIXES = ('.png', '.jpg', '.jpeg', '.bmp')
IMAGE_SUFFIXES = PLAIN_SUFFIXES + TIFF_SUFFIXES + OPENSLIDE_SUFFIXES
#: Multi-part extensions QuPath strips whole (``GeneralTools.getExtension``).
MULTIPART_EXTENSIONS = ('.ome.tiff', '.ome.tif', '.ome.zarr', '.tar.gz')
#: Exports whose missing image is an error (``.json`` / ``.zip`` may be other files).
STRICT_EXPORT_SUFFIXES = ('.geojson', '.geojson.gz')
#: Class of unclassified cells when no cell is classified.
DEFAULT_CLASS = 'cell'
CSV_COLUMNS = ('image', 'x', 'y')
REPORT_FILE = 'qupath_report.json'
#: Largest side of a polygon cell by default, in pixels (about 64 um at 0.25 um/px).
MAX_CELL_SIZE = 256
#: Pixel value painted over ignored areas (white: glass).
IGNORED_FILL = 255


def add_arguments(parser):
    """Options of ``prepare.py qupath``."""
    add_common_arguments(parser, tile=256, overlap=0, box_size=32, n_folds=1)
    parser.add_argument('--csv', type=Path, default=None,
                        help='CSV of points (header image,x,y[,class]; image relative to '
                             '--src) instead of the QuPath exports')
    parser.add_argument('--classes', default=None,
                        help='comma-separated cell classes, in category order (default: '
                             'every class of a cell, sorted); annotation polygons of other '
                             'classes are regions')
    parser.add_argument('--region-classes', default=None,
                        help='comma-separated classes whose annotation polygons are '
                             'regions (e.g. "Tumor" areas around "Tumor" cells)')
    parser.add_argument('--base-class', action='store_true',
                        help='name a derived class by its base: "Tumor: Positive" -> Tumor')
    parser.add_argument('--unclassified-class', default=None, metavar='NAME',
                        help='keep unclassified cells as class NAME (default: skipped when '
                             f'other cells are classified, else class {DEFAULT_CLASS!r})')
    parser.add_argument('--unclassified-polygons', choices=('region', 'cell'),
                        default='region',
                        help='unclassified annotation polygons are regions (default, '
                             "QuPath's convention) or, up to --max-cell-size, cells")
    parser.add_argument('--max-cell-size', type=float, default=MAX_CELL_SIZE,
                        help='largest side of a polygon cell in pixels; a larger annotation '
                             'polygon of a cell class stops the run, a larger detection is '
                             f'skipped (default {MAX_CELL_SIZE})')
    parser.add_argument('--plane', default=None, metavar='Z,T',
                        help='read the objects of this z-slice and time point only (needed '
                             'when an export holds several)')
    parser.add_argument('--derive-regions', type=float, default=None, metavar='MARGIN',
                        help='for images without a drawn region, regions = the boxes of '
                             'their cells grown by MARGIN pixels')
    parser.add_argument('--frame', choices=('bounds', 'level0'), default='bounds',
                        help="slide coordinates: QuPath's OpenSlide frame (default: level "
                             '0 less openslide.bounds-x/y) or level 0 (QuPath opened the '
                             'slide with Bio-Formats or --no-crop)')
    parser.add_argument('--group-regex', default=None,
                        help='regex whose first group, searched in the image path, is '
                             'the split key (slide); default: one group per image')


# ------------------------------------------------------------------------ pixels ----

class CropReader:
    """The regions of ``reader`` inside the crop starting at ``(x, y)``."""

    def __init__(self, reader, x, y):
        self.reader, self.x, self.y = reader, x, y

    def read_region(self, x0, y0, w, h):
        return self.reader.read_region(self.x + x0, self.y + y0, w, h)

    def close(self):
        self.reader.close()


class MaskedReader:
    """The regions of ``reader`` with the ``areas`` (:class:`~mmdet_pu.io.qupath.Region`
    polygons in its pixels) painted :data:`IGNORED_FILL`: every pixel whose centre lies
    inside one (holes excepted)."""

    def __init__(self, reader, areas):
        self.reader, self.areas = reader, list(areas)

    def read_region(self, x0, y0, w, h):
        pixels = self.reader.read_region(x0, y0, w, h)
        mask = np.zeros((h, w), dtype=bool)
        for area in self.areas:
            ax0, ay0, ax1, ay1 = area.bounds
            if ax1 > x0 and ay1 > y0 and ax0 < x0 + w and ay0 < y0 + h:
                mask |= area.pixel_mask(x0, y0, w, h)
        if not mask.any():
            return pixels
        pixels = np.array(pixels, copy=True)
        pixels[mask] = IGNORED_FILL
        return pixels

    def close(self):
        self.reader.close()


@dataclass
class ImageSource:
    """A raw image: its lazy level-0 reader, size, QuPath frame and resolution.

    ``frame`` is ``(x, y, width, height)``: QuPath's image in level-0 pixels.
    """
    path: Path
    reader: object
    size: Tuple[int, int]
    frame: Tuple[int, int, int, int]
    mpp: Optional[float] = None


def open_reader(path, use_bounds=True):
    """The :class:`ImageSource` of an image or slide; its reader opens it lazily."""
    path = Path(path)
    if path.suffix.lower() in PLAIN_SUFFIXES:
        size = image_size(path)
        return ImageSource(path, LazyImageReader(path), size, (0, 0, *size))
    with open_slide(path) as slide:
        return ImageSource(path, LazyImageReader(path, open_level_regions), slide.dimensions,
                           slide.qupath_frame(use_bounds), slide.mpp)


# ------------------------------------------------------------------- annotations ----

@dataclass
class Annotated:
    """One image with what was read from its annotation file."""
    source: str           # its path relative to --src (POSIX)
    display: str          # the annotation file, for messages
    unit: str             # 'feature' (GeoJSON) or 'line' (CSV): what a cell's feature is
    image: ImageSource
    content: object       # mmdet_pu.io.qupath.QuPathFile
    report: dict = field(default_factory=dict)


def qupath_stem(name):
    """An image name without its extension, by QuPath's ``GeneralTools.stripExtension``."""
    lower = name.lower()
    for extension in MULTIPART_EXTENSIONS:
        if lower.endswith(extension) and len(name) > len(extension):
            return name[:-len(extension)]
    dot = name.rfind('.')
    if dot > 0 and re.fullmatch(r'\.\w*', name[dot:]) and len(name) > dot + 1:
        return name[:dot]
    return name


def find_images(src):
    """``{source: path}`` of the image files below ``src`` (sorted)."""
    return {p.relative_to(src).as_posix(): p for p in sorted(src.rglob('*'))
            if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()}


def match_exports(src, images):
    """``({export path: source}, unused exports)``: each export with its image (module
    doc); raises on orphan ``.geojson`` files and ambiguous matches."""
    from mmdet_pu.io.qupath import export_stem
    by_key = {}
    for source, path in images.items():
        for stem in {qupath_stem(path.name), path.stem, path.name}:
            by_key.setdefault((path.parent, stem), []).append(source)
    exports, unused = {}, []
    for path in sorted(p for p in src.rglob('*') if p.is_file()
                       and export_stem(p.name) is not None):
        sources = by_key.get((path.parent, export_stem(path.name)), [])
        name = path.relative_to(src).as_posix()
        if len(sources) > 1:
            raise ValueError(f'{name}: ambiguous, it matches several images: '
                             f'{", ".join(sources)}; rename the export or the images')
        if sources:
            exports[path] = sources[0]
        elif path.name.lower().endswith(STRICT_EXPORT_SUFFIXES):
            raise ValueError(f'{name}: no image next to it (expected '
                             f'{export_stem(path.name)}<extension> with an extension in '
                             f'{", ".join(IMAGE_SUFFIXES)}; QuPath names the export after '
                             'the image without its extension, e.g. x.ome.tif -> '
                             'x.geojson)')
        else:
            unused.append(name)
    per_image = {}
    for path, source in exports.items():
        per_image.setdefault(source, []).append(path.relative_to(src).as_posix())
    for source, names in per_image.items():
        if len(names) > 1:
            raise ValueError(f'{source}: several exports belong to it ({", ".join(names)}); '
                             'keep one')
    return exports, unused


def read_exports(src, args, requested, regions):
    """``(annotated, unused exports, images without an export)`` of ``src``."""
    from mmdet_pu.io.qupath import AmbiguousClassError, read_geojson
    images = find_images(src)
    exports, unused = match_exports(src, images)
    annotated, ambiguous = [], []
    plane = parse_plane(args.plane)
    for export, source in exports.items():
        image = open_reader(images[source], args.frame == 'bounds')
        display = export.relative_to(src).as_posix()
        try:
            content = read_geojson(
                export, box_size=args.box_size, cell_classes=requested,
                region_classes=regions, image_size=image.frame[2:], offset=image.frame[:2],
                base_class=args.base_class, max_cell_size=args.max_cell_size,
                unclassified_polygons=args.unclassified_polygons, plane=plane,
                display=display)
        except AmbiguousClassError as err:
            ambiguous.append(err)
            continue
        check_first_plane(content, display)
        annotated.append(Annotated(source, display, 'feature', image, content))
    if ambiguous:
        raise ValueError(ambiguity_message(ambiguous, args.max_cell_size))
    if not annotated:
        raise ValueError(f'{src}: no image with a QuPath export next to it (<stem>.geojson, '
                         '.json, .geojson.gz or .zip, named like the image)')
    return annotated, unused, len(images) - len(annotated)


def ambiguity_message(errors, max_cell_size):
    """One message for the :class:`~mmdet_pu.io.qupath.AmbiguousClassError` of every
    file, with the options that resolve them."""
    from mmdet_pu.io.qupath import describe_oversized
    classes = sorted({label for err in errors for label in err.oversized})
    lines = [f'  {err.display}: {describe_oversized(err.oversized)}' for err in errors]
    return (f'annotation polygons of cell classes are larger than a cell (--max-cell-size '
            f'{max_cell_size:g} px), so they may be areas:\n' + '\n'.join(lines) +
            f'\nIf they are areas, pass --region-classes {",".join(classes)!r} (their '
            'polygons become regions); if they are cells, raise --max-cell-size above '
            'their size')


def parse_plane(text):
    """``'z,t'`` -> ``(z, t)``; only the first plane of an image can be read."""
    if text is None:
        return None
    try:
        z, t = (int(v) for v in text.split(','))
    except ValueError:
        raise ValueError(f'--plane {text!r}: expected z,t (two integers)') from None
    return z, t


def check_first_plane(content, display):
    """The image readers read plane z=0, t=0 only."""
    planes = {cell.plane for cell in content.cells} | {
        area.plane for area in content.regions + content.ignored_areas}
    other = sorted(planes - {(0, 0)})
    if other:
        z, t = other[0]
        raise ValueError(f'{display}: objects on plane z={z},t={t}, but only the first '
                         'plane (z=0, t=0) of the image is read; export that plane as an '
                         'image of its own, or choose --plane 0,0')


def read_points_csv(csv_path, src, box_size, use_bounds=True):
    """``annotated`` images of a CSV ``image,x,y[,class]`` (points, no regions)."""
    from mmdet_pu.io.qupath import QuPathFile, QuPathObject
    display = str(csv_path)
    try:
        with open(csv_path, encoding='utf-8-sig', newline='') as f:
            rows = list(csv.reader(f))
    except (UnicodeDecodeError, csv.Error) as err:
        raise ValueError(f'{display}: not a readable CSV file ({err})') from err
    header = [name.strip() for name in rows[0]] if rows else []
    missing = [c for c in CSV_COLUMNS if c not in header]
    if missing:
        raise ValueError(f'{display} line 1: missing column(s) {missing}; expected the '
                         f'header image,x,y[,class], got {header}')
    index = {name: i for i, name in enumerate(header)}
    by_image = {}
    for line, values in enumerate(rows[1:], start=2):
        if not any(v.strip() for v in values):
            continue
        if len(values) != len(header):
            raise ValueError(f'{display} line {line}: expected {len(header)} fields as in '
                             f'the header, got {len(values)}')
        source = values[index['image']].strip()
        if source not in by_image:
            path = src / source
            if PurePosixPath(source).is_absolute() or '..' in PurePosixPath(source).parts \
                    or path.suffix.lower() not in IMAGE_SUFFIXES or not path.is_file():
                raise ValueError(f'{display} line {line}: image {source!r} is not an image '
                                 f'file below --src (suffixes {", ".join(IMAGE_SUFFIXES)})')
            content = QuPathFile(features=Counter())
            by_image[source] = Annotated(source, display, 'line', open_reader(path, use_bounds),
                                         content)
        entry = by_image[source]
        try:
            x, y = float(values[index['x']]), float(values[index['y']])
        except ValueError:
            x = y = math.nan
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ValueError(f'{display} line {line}: expected numbers in x, y, got '
                             f'{values[index["x"]]!r}, {values[index["y"]]!r}')
        fx, fy, width, height = entry.image.frame
        if not (0 <= x < width and 0 <= y < height):
            raise ValueError(f'{display} line {line}: point (x={x:g}, y={y:g}) is outside '
                             f'the {width}x{height} image {source} (expected 0 <= x < '
                             f'{width}, 0 <= y < {height})')
        label = values[index['class']].strip() if 'class' in index else ''
        x, y, half = x + fx, y + fy, box_size / 2
        entry.content.cells.append(QuPathObject((x - half, y - half, x + half, y + half),
                                                label or None, None, (x, y), str(line),
                                                'csv row'))
        entry.content.features['csv row'] += 1
    if not by_image:
        raise ValueError(f'{display}: no cells (expected rows image,x,y[,class])')
    return list(by_image.values())


# ----------------------------------------------------------------------- classes ----

def parse_classes(text, option='--classes'):
    """The names of ``--classes a,b``."""
    names = [name.strip() for name in text.split(',')]
    if not all(names) or len(set(names)) != len(names):
        raise ValueError(f'{option} {text!r}: expected distinct, non-empty class names '
                         'separated by commas')
    return names


def choose_classes(annotated, requested, unclassified_class):
    """``(classes, label of unclassified cells or None)``; checks ``--classes``."""
    cells = [cell for entry in annotated for cell in entry.content.cells]
    found = {cell.label for cell in cells} - {None}
    has_unclassified = any(cell.label is None for cell in cells)
    if requested is not None:
        unknown = [name for name in requested if name not in found
                   and name != unclassified_class]
        if unknown:
            raise ValueError(f'--classes: no cell has class(es) {unknown}; the cells\' '
                             f'classes are {sorted(found)}')
        if unclassified_class is not None and unclassified_class not in requested:
            raise ValueError(f'--unclassified-class {unclassified_class!r} is not one of '
                             f'--classes {requested}; add it there')
        return list(requested), unclassified_class
    if unclassified_class is None and not found:
        unclassified_class = DEFAULT_CLASS
    if unclassified_class is not None and has_unclassified:
        found.add(unclassified_class)
    return sorted(found) or [unclassified_class], unclassified_class


def group_of(source, pattern):
    """The split key of an image: the regex's first group, or the image itself."""
    if pattern is None:
        return source
    match = pattern.search(source)
    if match is None or match.group(1) is None:
        raise ValueError(f'--group-regex {pattern.pattern!r} does not match the image '
                         f'path {source!r} (its first group is the slide key)')
    return match.group(1)


def compile_group_regex(text):
    if text is None:
        return None
    try:
        pattern = re.compile(text)
    except re.error as err:
        raise ValueError(f'--group-regex {text!r}: not a valid regular expression '
                         f'({err})') from err
    if pattern.groups < 1:
        raise ValueError(f'--group-regex {text!r}: needs a group (...) for the slide key')
    return pattern


# ----------------------------------------------------------------------- regions ----

def region_crops(regions, frame):
    """Crops ``(x, y, w, h)``: region bounds clipped to ``frame`` (``(x, y, w, h)``),
    rounded outwards to whole pixels, overlapping ones merged into the box of their
    union; row by row."""
    fx, fy, fw, fh = frame
    boxes = [(max(fx, math.floor(x0)), max(fy, math.floor(y0)),
              min(fx + fw, math.ceil(x1)), min(fy + fh, math.ceil(y1)))
             for x0, y0, x1, y1 in (region.bounds for region in regions)]
    boxes = [b for b in boxes if b[2] > b[0] and b[3] > b[1]]
    while True:
        pair = next(((i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
                     if _overlap(boxes[i], boxes[j])), None)
        if pair is None:
            break
        other = boxes.pop(pair[1])
        boxes[pair[0]] = _union(boxes[pair[0]], other)
    return [(x0, y0, x1 - x0, y1 - y0)
            for y0, x0, y1, x1 in sorted((b[1], b[0], b[3], b[2]) for b in boxes)]


def _overlap(a, b):
    """Whether two ``(x0, y0, x1, y1)`` boxes share a positive area."""
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def _union(a, b):
    return min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])


def derived_regions(cells, margin):
    """One rectangular :class:`~mmdet_pu.io.qupath.Region` per cell: its box grown by
    ``margin`` pixels."""
    from mmdet_pu.io.qupath import Region
    regions = []
    for cell in cells:
        x0, y0, x1, y1 = cell.box
        x0, y0, x1, y1 = x0 - margin, y0 - margin, x1 + margin, y1 + margin
        regions.append(Region(((x0, y0), (x1, y0), (x1, y1), (x0, y1))))
    return regions


def anchors_of(cells):
    """(N, 2) point of each cell, the box centre for polygons."""
    return np.asarray([c.point if c.point is not None else
                       ((c.box[0] + c.box[2]) / 2, (c.box[1] + c.box[3]) / 2)
                       for c in cells], dtype=np.float64).reshape(-1, 2)


def inside_any(areas, anchors):
    inside = np.zeros(len(anchors), dtype=bool)
    for area in areas:
        inside |= area.contains(anchors)
    return inside


# ----------------------------------------------------------------------- images -----

UNCLASSIFIED = 'skipped: unclassified (other cells are classified; --unclassified-class ' \
    'NAME keeps them)'
INSIDE_IGNORED = 'skipped: inside an ignored area'
OUTSIDE_REGIONS = 'skipped: outside every region'


def source_images(entry, classes, unclassified_label, group, derive_margin):
    """The :class:`SourceImage` of each crop of one annotated image; fills
    ``entry.report`` with what became of every object."""
    content = entry.content
    outcomes = {kind: Counter() for kind in content.features}
    for skipped in content.skipped:
        outcomes.setdefault(skipped.object_type, Counter())[
            f'skipped: {skipped.reason}'] += skipped.count
    for areas, outcome in ((content.regions, 'region'),
                           (content.ignored_areas, 'ignored area')):
        if areas:
            outcomes.setdefault('annotation', Counter())[outcome] += len(
                {area.feature for area in areas})
    cells, labels = [], []
    anchors = anchors_of(content.cells)
    ignored = inside_any(content.ignored_areas, anchors)
    for cell, in_ignored in zip(content.cells, ignored):
        label = cell.label if cell.label is not None else unclassified_label
        if label is None:
            fate = UNCLASSIFIED
        elif label not in classes:
            fate = f'skipped: class {label!r} not in --classes'
        elif in_ignored:
            fate = INSIDE_IGNORED
        else:
            cells.append(cell)
            labels.append(label)
            continue
        outcomes.setdefault(cell.object_type, Counter())[fate] += 1
    anchors = anchors_of(cells)
    regions, derived = content.regions, []
    if not regions and derive_margin is not None:
        derived = derived_regions(cells, derive_margin)
    outside = ~inside_any(regions, anchors) if regions else np.zeros(len(cells), bool)
    if regions or derived:
        crops = region_crops(regions or derived, entry.image.frame)
    else:
        crops = [entry.image.frame] if derive_margin is None else []
    reader = entry.image.reader
    if content.ignored_areas:
        reader = MaskedReader(reader, content.ignored_areas)
    assigned = np.zeros(len(cells), dtype=bool)
    images, per_class = [], Counter()
    whole = (0, 0, *entry.image.size)
    for k, (x, y, w, h) in enumerate(crops, start=1):
        if w * h > MAX_WHOLE_PIXELS:
            what = f'region crop {k} at x={x}, y={y}' if regions or derived else \
                f'image {entry.source} (no region is drawn)'
            raise ValueError(f'{entry.display}: {what} is {w}x{h} pixels, more than '
                             f'{MAX_WHOLE_PIXELS} (test crops are written whole); draw '
                             'smaller regions (unclassified or Region* annotations) around '
                             'the annotated cells in QuPath, or derive them with '
                             '--derive-regions MARGIN')
        keep = np.flatnonzero(~assigned & (anchors[:, 0] >= x) & (anchors[:, 0] < x + w)
                              & (anchors[:, 1] >= y) & (anchors[:, 1] < y + h))
        assigned[keep] = True
        crop_cells = [cells[i] for i in keep]
        crop_labels = [classes.index(labels[i]) + 1 for i in keep]
        for i in keep:
            per_class[labels[i]] += 1
            outcomes.setdefault(cells[i].object_type, Counter())[f'cell: {labels[i]}'] += 1
        offset = np.array([x, y, x, y], dtype=np.float64)
        if all(c.point is not None for c in crop_cells):
            geometry = dict(points=anchors[keep] - offset[:2])
        else:
            boxes = np.asarray([c.box for c in crop_cells], dtype=np.float64).reshape(-1, 4)
            boxes -= offset
            geometry = dict(boxes=np.concatenate([boxes[:, :2], boxes[:, 2:] - boxes[:, :2]],
                                                 axis=1))
        is_whole = (x, y, w, h) == whole and not (regions or derived)
        images.append(SourceImage(
            source=entry.source, group=group, width=w, height=h, labels=crop_labels,
            reader=reader if is_whole else CropReader(reader, x, y),
            origin=None if is_whole else (x, y), mpp=entry.image.mpp, **geometry))
    for i in np.flatnonzero(~assigned):
        outcomes.setdefault(cells[i].object_type, Counter())[OUTSIDE_REGIONS] += 1
    entry.report = dict(
        file=entry.display, image=entry.source, size=list(entry.image.size),
        frame=list(entry.image.frame), mpp=entry.image.mpp, features=dict(content.features),
        objects={kind: dict(sorted(counts.items())) for kind, counts in outcomes.items()},
        cells=dict(sorted(per_class.items())), regions=len(regions),
        derived_regions=len(derived), ignored_areas=len(content.ignored_areas),
        crops=len(crops), outside_regions=int((outside & assigned).sum()),
        notes=list(content.notes))
    return images


def split_by_region_if_needed(images, n_folds):
    """Give each crop its own group when the images (or slides) are too few for the
    split but their crops are not; a warning says so."""
    needed = 3 if n_folds == 1 else n_folds + 1
    groups = {image.group for image in images}
    if len(groups) >= needed:
        return
    if len(images) < needed:
        raise ValueError(f'{len(images)} annotated region(s) in {len(groups)} group(s) '
                         f'are too few for the split (it needs {needed}: a train, a val and '
                         'a test group per fold); draw more regions in QuPath (or use '
                         '--derive-regions) or annotate more images')
    for image in images:
        x, y = image.origin or (0, 0)
        image.group = f'{image.source}@x{x}_y{y}'
    warnings.warn(f'{len(groups)} image group(s) are too few for the split (it needs '
                  f'{needed}); splitting their {len(images)} regions instead, so train and '
                  'test regions may come from the same image', stacklevel=2)


# ------------------------------------------------------------------------ report ----

def format_outcomes(objects):
    """``'annotation: region 2, cell: tumor 3; detection: ...'`` of a report entry."""
    parts = []
    for kind, counts in objects.items():
        if counts:
            parts.append(f'{kind}: ' + ', '.join(f'{k} {n}' for k, n in counts.items()))
    return '; '.join(parts) or 'no objects'


def report_lines(entries):
    lines = []
    for entry in entries:
        report = entry.report
        features = ', '.join(f'{k} {n}' for k, n in report['features'].items())
        lines.append(f'{report["file"]} -> {report["image"]}: {sum(report["features"].values())}'
                     f' feature(s) ({features or "none"}): {format_outcomes(report["objects"])}')
        lines += [f'    note: {note}' for note in report['notes'][:5]]
        if len(report['notes']) > 5:
            lines.append(f'    ... {len(report["notes"]) - 5} more note(s) in {REPORT_FILE}')
    return lines


def totals(entries):
    objects = {}
    for entry in entries:
        for kind, counts in entry.report['objects'].items():
            objects.setdefault(kind, Counter()).update(counts)
    return {kind: dict(sorted(counts.items())) for kind, counts in objects.items()}


def no_cell_message(entries, classes):
    """Why nothing was written, per file, and what to change."""
    shown = entries[:20]
    lines = [f'  {entry.display}: {format_outcomes(entry.report["objects"])}' for entry in
             shown]
    if len(entries) > len(shown):
        lines.append(f'  ... and {len(entries) - len(shown)} more file(s)')
    outcomes = Counter()
    for counts in totals(entries).values():
        outcomes.update(counts)
    hints = []
    if outcomes[UNCLASSIFIED]:
        hints.append('unclassified cells are skipped when other cells are classified: keep '
                     'them with --unclassified-class NAME')
    if any(k.startswith('skipped: class ') for k in outcomes):
        hints.append(f'cells of classes outside --classes {classes} are skipped: check '
                     '--classes')
    if outcomes['region'] and not any(k.startswith('cell: ') for k in outcomes):
        hints.append('annotation polygons are regions (unclassified, Region*, or a class '
                     'not in --classes); if they outline cells, classify them in QuPath '
                     'or pass --unclassified-polygons cell')
    if outcomes[OUTSIDE_REGIONS]:
        hints.append('cells outside every region are skipped: draw the regions around the '
                     'annotated cells')
    if outcomes['skipped: outside the image']:
        hints.append('objects outside the image are skipped: is each export that of its '
                     'image? (slides with openslide.bounds-*: see --frame)')
    if not hints:
        hints.append('mark cells as points (or detections / cell-class polygons) in QuPath '
                     'and export them with the regions')
    return ('no cell to write (nothing written):\n' + '\n'.join(lines) + '\nFix: ' +
            '; '.join(hints))


# ------------------------------------------------------------------------ output ----

def add_category_colors(root, colors):
    """Store ``color`` ([r, g, b]) on the categories of every written COCO file."""
    for path in sorted(Path(root, 'annotations').glob('fold*/*.json')):
        coco = json.loads(path.read_text())
        for category in coco['categories']:
            category['color'] = list(colors[category['name']])
        write_json_atomic(path, coco)


def prepare(args):
    """Convert ``args.src`` to ``args.out``; returns the writer summary, the raw counts
    (``raw``), the class colours and the report (``report``)."""
    from mmdet_pu.io.qupath import default_color
    requested = parse_classes(args.classes) if args.classes is not None else None
    regions = parse_classes(args.region_classes, '--region-classes') \
        if args.region_classes is not None else []
    both = sorted(set(regions) & set(requested or ()))
    if both:
        raise ValueError(f'class(es) {both} are in both --classes and --region-classes')
    if not args.max_cell_size > 0:
        raise ValueError(f'--max-cell-size must be positive, got {args.max_cell_size}')
    pattern = compile_group_regex(args.group_regex)
    unused, without_export = [], 0
    if args.csv is not None:
        annotated = read_points_csv(args.csv, args.src, args.box_size,
                                    args.frame == 'bounds')
    else:
        annotated, unused, without_export = read_exports(args.src, args, requested, regions)
    classes, unclassified = choose_classes(annotated, requested, args.unclassified_class)
    colors = {}
    for entry in annotated:
        for name, color in entry.content.colors.items():
            colors.setdefault(name, color)
    colors = {name: tuple(colors.get(name) or default_color(name)) for name in classes}
    images = [image for entry in annotated for image in source_images(
        entry, classes, unclassified, group_of(entry.source, pattern), args.derive_regions)]
    written = sum(len(image.labels) for image in images)
    if written == 0:
        raise ValueError(no_cell_message(annotated, classes))
    split_by_region_if_needed(images, args.n_folds)
    splits = split_groups([image.group for image in images], ratios=(4, 1, 1),
                          seed=args.seed, n_folds=args.n_folds)
    report = dict(files=[entry.report for entry in annotated], totals=totals(annotated),
                  classes=classes, colors={n: list(c) for n, c in colors.items()},
                  unused_files=unused, images_without_export=without_export)
    counts = raw_counts(annotated, images, unused, without_export, classes)
    protect = [args.src] + ([args.csv] if args.csv is not None else [])
    with AtomicOutput(args.out, overwrite=args.overwrite, protect=protect) as tmp:
        summary = write_dataset(
            tmp, classes, images, splits, tile=args.tile or None, overlap=args.overlap,
            box_size=args.box_size, drop_empty_tiles=args.drop_empty_tiles,
            src=args.src, total=len(images), progress=args.progress)
        add_category_colors(tmp, colors)
        write_json_atomic(Path(tmp) / REPORT_FILE, report, indent=1)
    summary.update(raw=counts, colors=report['colors'], report=report)
    print('\n'.join(report_lines(annotated)))
    if unused:
        print(f'unused (no image of that name): {", ".join(unused)}')
    print('raw: ' + ', '.join(f'{k}={v}' for k, v in counts.items() if k != 'per_class'))
    print('classes: ' + ', '.join(f'{name}={counts["per_class"][name]} (rgb {colors[name]})'
                                  for name in classes))
    print(f'report: {Path(args.out) / REPORT_FILE}')
    return summary


def raw_counts(annotated, images, unused, without_export, classes):
    """Dataset-wide counts (summed over the report's files)."""
    outcomes = Counter()
    for counts in totals(annotated).values():
        outcomes.update(counts)
    reports = [entry.report for entry in annotated]
    return dict(
        images=len(annotated), groups=len({image.group for image in images}),
        regions=sum(r['regions'] for r in reports),
        derived_regions=sum(r['derived_regions'] for r in reports),
        ignored_areas=sum(r['ignored_areas'] for r in reports), crops=len(images),
        cells_read=sum(len(entry.content.cells) for entry in annotated),
        cells_written=sum(len(image.labels) for image in images),
        other_class=sum(n for k, n in outcomes.items() if k.startswith('skipped: class ')),
        unclassified=outcomes[UNCLASSIFIED], inside_ignored=outcomes[INSIDE_IGNORED],
        outside_regions=sum(r['outside_regions'] for r in reports),
        dropped_outside_regions=outcomes[OUTSIDE_REGIONS],
        skipped_features=sum(len(entry.content.skipped) for entry in annotated),
        images_without_export=without_export, unused_files=len(unused),
        per_class={name: sum(r['cells'].get(name, 0) for r in reports) for name in classes})
