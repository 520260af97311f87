"""Partially annotated user data (QuPath GeoJSON or a CSV of points) -> tiled COCO files.

Input (``--src DIR``, only read)::

    DIR/**/<name>.png|.jpg|.bmp|.tif|.svs|.ndpi|.mrxs|...   images and whole slides
    DIR/**/<name>.geojson                                   QuPath export of each image

An image is converted when a ``<stem>.geojson`` lies next to it (other images are
skipped and counted); a GeoJSON file without its image is an error. The GeoJSON rules
(QuPath 0.2-0.5 styles, points / detections / cells / annotation polygons, regions) are
those of :mod:`mmdet_pu.io.qupath`. With ``--csv FILE`` (header ``image,x,y[,class]``,
``image`` = path relative to DIR, other columns ignored) the images named in the CSV are
converted instead, each cell a point and each image its own region; GeoJSON files are
then not read.

Pixels: PNG / JPEG / BMP through :class:`mmdet_pu.io.images.LazyImageReader`; TIFFs and
whole slides through the reader of whole-slide inference,
:func:`mmdet_pu.io.slides.open_slide`, at level 0 (:class:`SlideRegions`:
OpenSlide; a TIFF that OpenSlide cannot open is read with tifffile, region by region).
The GeoJSON reader and the slide reader are imported from ``mmdet_pu`` by the functions
that read files: importing ``mmdet_pu`` registers its models (torch, mmdet: seconds),
which ``prepare.py qupath -h`` does not need.

Regions. The annotated regions of an image are its unclassified annotation polygons and
``Region*`` ones (with ``--classes``: every annotation polygon whose class is not
listed); an image without regions is one region. Only regions are written, since
outside them nothing is known: each region's bounding box, clipped to the image and
rounded outwards to whole pixels, is cut out, overlapping boxes are merged into the box
of their union, and each such *crop* becomes one source image of the writer (``source =
<image path without suffix>_region<k>_x<X>_y<Y><suffix>``, ``k`` from 1 row by row,
``X, Y`` its level-0 offset; an image without regions keeps its own path), tiled by the
writer's grid from its top-left corner (every tile of the crop is kept). A cell belongs
to the crop containing its point (box centre for polygons); cells outside every region
polygon are counted (``outside_regions``), kept when they fall in a crop, dropped
otherwise (``dropped_outside_regions``). A crop may not exceed
:data:`mmdet_pu.io.images.MAX_WHOLE_PIXELS` pixels (test crops are written whole).

Classes. ``--classes a,b`` selects and orders the classes (a listed class that no cell
has is an error; cells of other classes are dropped and counted as ``other_class``);
without it, every class of a cell, sorted by name, or ``cell`` if no cell is classified.
Unclassified cells take the class when there is exactly one, else they are an error.
COCO categories carry ``color`` ([r, g, b]) from the GeoJSON classifications
(:func:`mmdet_pu.io.qupath.default_color` for classes without one).

Boxes: a ``--box-size`` box centred on each point (the paper's 32 px by default), the
bounding box of each polygon. A crop whose cells are all points gives the writer points
(annotations get ``point``), else boxes. Splits: 4:1:1 by image, or by slide with
``--group-regex`` (its first group, searched in the image path, is the slide key).
"""
import csv
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np

from data_prep.splits import split_groups
from data_prep.writer import SourceImage, add_common_arguments, write_dataset
from mmdet_pu.io.atomic import AtomicOutput, write_json_atomic
from mmdet_pu.io.images import MAX_WHOLE_PIXELS, LazyImageReader, image_size
from mmdet_pu.io.slides import OPENSLIDE_SUFFIXES, open_slide
from mmdet_pu.io.tiff import TIFF_SUFFIXES

#: Ordinary images, decoded whole by OpenCV.
PLAIN_SUFFIXES = ('.png', '.jpg', '.jpeg', '.bmp')
IMAGE_SUFFIXES = PLAIN_SUFFIXES + TIFF_SUFFIXES + OPENSLIDE_SUFFIXES
#: Class of the cells when none is classified and ``--classes`` is not given.
DEFAULT_CLASS = 'cell'
CSV_COLUMNS = ('image', 'x', 'y')


def add_arguments(parser):
    """Options of ``prepare.py qupath``."""
    add_common_arguments(parser, tile=256, overlap=0, box_size=32, n_folds=1)
    parser.add_argument('--csv', type=Path, default=None,
                        help='CSV of points (header image,x,y[,class]; image relative to '
                             '--src) instead of the GeoJSON files')
    parser.add_argument('--classes', default=None,
                        help='comma-separated cell classes, in category order (default: '
                             'every class of a cell, sorted)')
    parser.add_argument('--group-regex', default=None,
                        help='regex whose first group, searched in the image path, is '
                             'the split key (slide); default: one group per image')


# ------------------------------------------------------------------------ pixels ----

class SlideRegions:
    """Level-0 regions of a TIFF or whole slide, opened on the first read.

    The slide is opened with :func:`mmdet_pu.io.slides.open_slide` (OpenSlide;
    tifffile for TIFFs OpenSlide cannot open); ``close()`` releases it and it is
    reopened if read again, so a converter can describe many slides without holding
    them open.
    """

    def __init__(self, path):
        self.path = Path(path)
        self._slide = None

    def read_region(self, x0, y0, w, h):
        """RGB ``uint8`` pixels of the level-0 region ``[x0, x0+w) x [y0, y0+h)``."""
        if self._slide is None:
            self._slide = open_slide(self.path)
        return self._slide.read_region(0, x0, y0, w, h)

    def close(self):
        if self._slide is not None:
            self._slide.close()
            self._slide = None


class CropReader:
    """The regions of ``reader`` inside the crop starting at ``(x, y)``."""

    def __init__(self, reader, x, y):
        self.reader, self.x, self.y = reader, x, y

    def read_region(self, x0, y0, w, h):
        return self.reader.read_region(self.x + x0, self.y + y0, w, h)

    def close(self):
        self.reader.close()


def open_reader(path):
    """``(reader, (width, height))`` of an image or slide; the reader opens it lazily."""
    if path.suffix.lower() in PLAIN_SUFFIXES:
        return LazyImageReader(path), image_size(path)
    with open_slide(path) as slide:
        return SlideRegions(path), slide.dimensions


# ------------------------------------------------------------------- annotations ----

@dataclass
class Annotated:
    """One image with its cells and regions, as read from its annotation file."""
    source: str           # its path relative to --src (POSIX)
    display: str          # the annotation file, for messages
    unit: str             # 'feature' (GeoJSON) or 'line' (CSV): what QuPathObject.feature is
    reader: object
    size: tuple
    cells: list
    regions: list


def find_images(src):
    """``{source: path}`` of the image files below ``src`` (sorted)."""
    return {p.relative_to(src).as_posix(): p for p in sorted(src.rglob('*'))
            if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()}


def read_geojson_dir(src, box_size, cell_classes):
    """``(annotated, colors, counts)`` of every image with a ``<stem>.geojson``."""
    from mmdet_pu.io.qupath import read_geojson
    images = find_images(src)
    by_geojson = {}
    for source, path in images.items():
        by_geojson.setdefault(path.with_suffix('.geojson'), []).append(source)
    geojsons = sorted(src.rglob('*.geojson'))
    for geojson in geojsons:
        sources = by_geojson.get(geojson, [])
        name = geojson.relative_to(src).as_posix()
        if not sources:
            raise ValueError(f'{name}: no image next to it (expected '
                             f'{geojson.stem}<suffix> with a suffix in '
                             f'{", ".join(IMAGE_SUFFIXES)})')
        if len(sources) > 1:
            raise ValueError(f'{name}: ambiguous, several images share its stem: '
                             f'{", ".join(sources)}')
    annotated, colors, ignored = [], {}, 0
    for geojson in geojsons:
        source = by_geojson[geojson][0]
        reader, size = open_reader(images[source])
        display = geojson.relative_to(src).as_posix()
        content = read_geojson(geojson, box_size=box_size, cell_classes=cell_classes,
                               image_size=size, display=display)
        for name, color in content.colors.items():
            colors.setdefault(name, color)
        ignored += content.ignored
        annotated.append(Annotated(source, display, 'feature', reader, size, content.cells,
                                   content.regions))
    if not annotated:
        raise ValueError(f'{src}: no image with a QuPath export <stem>.geojson next to it')
    counts = dict(images_without_geojson=len(images) - len(annotated),
                  ignored_features=ignored)
    return annotated, colors, counts


def read_points_csv(csv_path, src, box_size):
    """``annotated`` images of a CSV ``image,x,y[,class]`` (points, no regions)."""
    from mmdet_pu.io.qupath import QuPathObject
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
            reader, size = open_reader(path)
            by_image[source] = Annotated(source, display, 'line', reader, size, [], [])
        entry = by_image[source]
        try:
            x, y = float(values[index['x']]), float(values[index['y']])
        except ValueError:
            x = y = math.nan
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ValueError(f'{display} line {line}: expected numbers in x, y, got '
                             f'{values[index["x"]]!r}, {values[index["y"]]!r}')
        width, height = entry.size
        if not (0 <= x < width and 0 <= y < height):
            raise ValueError(f'{display} line {line}: point (x={x:g}, y={y:g}) is outside '
                             f'the {width}x{height} image {source} (expected 0 <= x < '
                             f'{width}, 0 <= y < {height})')
        label = values[index['class']].strip() if 'class' in index else ''
        half = box_size / 2
        entry.cells.append(QuPathObject((x - half, y - half, x + half, y + half),
                                        label or None, None, (x, y), line))
    if not by_image:
        raise ValueError(f'{display}: no cells (expected rows image,x,y[,class])')
    return list(by_image.values())


# ----------------------------------------------------------------------- classes ----

def parse_classes(text):
    """The names of ``--classes a,b``."""
    names = [name.strip() for name in text.split(',')]
    if not all(names) or len(set(names)) != len(names):
        raise ValueError(f'--classes {text!r}: expected distinct, non-empty class names '
                         'separated by commas')
    return names


def choose_classes(annotated, requested):
    """The dataset's classes; checks ``--classes`` and the unclassified cells."""
    found = {cell.label for entry in annotated for cell in entry.cells} - {None}
    if requested is not None:
        unknown = [name for name in requested if name not in found]
        if unknown:
            raise ValueError(f'--classes: no cell has class(es) {unknown}; the cells\' '
                             f'classes are {sorted(found)}')
        classes = list(requested)
    else:
        classes = sorted(found) or [DEFAULT_CLASS]
    if len(classes) > 1:
        for entry in annotated:
            cell = next((c for c in entry.cells if c.label is None), None)
            if cell is not None:
                raise ValueError(
                    f'{entry.display} {entry.unit} {cell.feature}: unclassified cell, but '
                    f'there are {len(classes)} classes {classes}; classify it in QuPath '
                    'or pass --classes with one class')
    return classes


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

def region_crops(regions, width, height):
    """Crops ``(x, y, w, h)``: region bounds clipped to the image, rounded outwards to
    whole pixels, overlapping ones merged into the box of their union; row by row."""
    boxes = [(max(0, math.floor(x0)), max(0, math.floor(y0)),
              min(width, math.ceil(x1)), min(height, math.ceil(y1)))
             for x0, y0, x1, y1 in (region.bounds for region in regions)]
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


def anchors_of(cells):
    """(N, 2) point of each cell, the box centre for polygons."""
    return np.asarray([c.point if c.point is not None else
                       ((c.box[0] + c.box[2]) / 2, (c.box[1] + c.box[3]) / 2)
                       for c in cells], dtype=np.float64).reshape(-1, 2)


def source_images(entry, classes, group, counts):
    """The :class:`SourceImage` of each crop of one annotated image; updates ``counts``."""
    width, height = entry.size
    cells = [c for c in entry.cells if c.label is None or c.label in classes]
    counts['other_class'] += len(entry.cells) - len(cells)
    counts['unclassified'] += sum(c.label is None for c in cells)
    anchors = anchors_of(cells)
    if entry.regions:
        inside = np.zeros(len(cells), dtype=bool)
        for region in entry.regions:
            inside |= region.contains(anchors)
        counts['outside_regions'] += int((~inside).sum())
        crops = region_crops(entry.regions, width, height)
    else:
        crops = [(0, 0, width, height)]
    counts['regions'] += len(entry.regions)
    assigned = np.zeros(len(cells), dtype=bool)
    images = []
    for k, (x, y, w, h) in enumerate(crops, start=1):
        if w * h > MAX_WHOLE_PIXELS:
            what = f'region crop {k} at x={x}, y={y}' if entry.regions else \
                f'image {entry.source} (it has no regions)'
            raise ValueError(f'{entry.display}: {what} is {w}x{h} pixels, more than '
                             f'{MAX_WHOLE_PIXELS} (test crops are written whole); draw '
                             'smaller regions (unclassified or Region* annotations) around '
                             'the annotated cells in QuPath')
        keep = np.flatnonzero((anchors[:, 0] >= x) & (anchors[:, 0] < x + w)
                              & (anchors[:, 1] >= y) & (anchors[:, 1] < y + h))
        assigned[keep] = True
        crop_cells = [cells[i] for i in keep]
        labels = [classes.index(c.label) + 1 if c.label is not None else 1
                  for c in crop_cells]
        for label in labels:
            counts['per_class'][classes[label - 1]] += 1
        offset = np.array([x, y, x, y], dtype=np.float64)
        if all(c.point is not None for c in crop_cells):
            geometry = dict(points=anchors[keep] - offset[:2])
        else:
            boxes = np.asarray([c.box for c in crop_cells], dtype=np.float64).reshape(-1, 4)
            boxes -= offset
            geometry = dict(boxes=np.concatenate([boxes[:, :2], boxes[:, 2:] - boxes[:, :2]],
                                                 axis=1))
        if entry.regions:
            path = PurePosixPath(entry.source)
            source = f'{path.with_suffix("")}_region{k}_x{x}_y{y}{path.suffix}'
            reader = CropReader(entry.reader, x, y)
        else:
            source, reader = entry.source, entry.reader
        images.append(SourceImage(source=source, group=group, reader=reader, width=w,
                                  height=h, labels=labels, **geometry))
    counts['crops'] += len(crops)
    counts['dropped_outside_regions'] += int((~assigned).sum())
    return images


# ------------------------------------------------------------------------ output ----

def add_category_colors(root, colors):
    """Store ``color`` ([r, g, b]) on the categories of every written COCO file."""
    for path in sorted(Path(root, 'annotations').glob('fold*/*.json')):
        coco = json.loads(path.read_text())
        for category in coco['categories']:
            category['color'] = list(colors[category['name']])
        write_json_atomic(path, coco)


def prepare(args):
    """Convert ``args.src`` to ``args.out``; returns the writer summary + raw counts."""
    from mmdet_pu.io.qupath import default_color
    requested = parse_classes(args.classes) if args.classes is not None else None
    pattern = compile_group_regex(args.group_regex)
    if args.csv is not None:
        annotated, colors = read_points_csv(args.csv, args.src, args.box_size), {}
        counts = {}
    else:
        annotated, colors, counts = read_geojson_dir(args.src, args.box_size, requested)
    classes = choose_classes(annotated, requested)
    colors = {name: tuple(colors.get(name) or default_color(name)) for name in classes}
    counts = dict(images=len(annotated), groups=0, regions=0, crops=0,
                  cells_read=sum(len(e.cells) for e in annotated), other_class=0,
                  unclassified=0, outside_regions=0, dropped_outside_regions=0,
                  **counts, per_class={name: 0 for name in classes})
    groups = {entry.source: group_of(entry.source, pattern) for entry in annotated}
    counts['groups'] = len(set(groups.values()))
    images = [image for entry in annotated
              for image in source_images(entry, classes, groups[entry.source], counts)]
    splits = split_groups(list(groups.values()), ratios=(4, 1, 1), seed=args.seed,
                          n_folds=args.n_folds)
    protect = [args.src] + ([args.csv] if args.csv is not None else [])
    with AtomicOutput(args.out, overwrite=args.overwrite, protect=protect) as tmp:
        summary = write_dataset(
            tmp, classes, images, splits, tile=args.tile or None, overlap=args.overlap,
            box_size=args.box_size, drop_empty_tiles=args.drop_empty_tiles,
            src=args.src, total=len(images), progress=args.progress)
        add_category_colors(tmp, colors)
    summary['raw'] = counts
    summary['colors'] = {name: list(color) for name, color in colors.items()}
    print('raw: ' + ', '.join(f'{k}={v}' for k, v in counts.items() if k != 'per_class'))
    print('classes: ' + ', '.join(f'{name}={counts["per_class"][name]} (rgb {colors[name]})'
                                  for name in classes))
    return summary
