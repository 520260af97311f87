"""Partially annotated user data (QuPath exports or a CSV of points) -> tiled COCO files.

Input (``--src DIR``, only read)::

    DIR/**/<name>.png|.jpg|.bmp|.tif|.ome.tif|.svs|.ndpi|.mrxs|...   images and slides
    DIR/**/<stem>.geojson|.json|.geojson.gz|.json.gz|.zip            QuPath export of each

Matching. An export belongs to the image in its folder whose name without extension is
its stem, by QuPath's rule (:mod:`cellio.qupath.naming`: ``x.ome.tif`` ->
``x.geojson``, also ``x.ome.geojson`` and ``x.svs.geojson``). Images without an export
are skipped and counted; a ``.geojson`` (``.gz``) without its image, an export matching
two images and an image with two exports are errors; a ``.json`` or ``.zip`` matching no
image is listed as unused (QuPath project folders hold other JSON). The GeoJSON rules
(every form QuPath 0.2-0.6 writes) are those of :mod:`cellio.qupath`. With ``--csv
FILE`` (header ``image,x,y[,class]``, ``image`` = path relative to DIR, other columns
ignored; :func:`data_prep.points.read_point_table`) the images named in the CSV are read
instead, each row a point; exports are then not read.

Pixels and coordinates (:func:`cellio.sources.open_image_source`). PNG / JPEG / BMP
through :class:`cellio.images.LazyImageReader`; TIFFs and whole slides through
:func:`cellio.slides.open_level_regions` at level 0 (opened lazily), the reader of
whole-slide inference, which also gives their ``mpp`` (written on every image entry).
Exports are in QuPath's frame (:meth:`~cellio.slides.SlideReader.qupath_frame`): on
a slide with ``openslide.bounds-*`` (MIRAX) QuPath's origin is the bounds' corner and
its image the bounds, so coordinates are shifted by it into level-0 pixels of the file
(``--frame level0`` for a slide QuPath opened with Bio-Formats or ``--no-crop``); objects
outside QuPath's image are skipped and reported, and an export whose every region lies
outside its image is an error that says by how much. Only the first plane (``z = t =
0``) of an image is read.

Roles (see :func:`cellio.qupath.annotation_role`):

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
(:func:`cellio.qupath.default_color` for classes without one).

Images written (:mod:`data_prep.qupath_crops`). Each region's bounding box is clipped to
QuPath's image, rounded outwards to whole pixels, overlapping boxes are merged, and each
such *crop* becomes one :class:`~data_prep.writer.SourceImage` with ``source`` = the raw
image path and ``origin`` = its level-0 corner, so every image entry's ``source`` +
``x0``, ``y0`` locates it in the raw file (an image without regions is written whole,
``origin`` the frame's corner when QuPath crops it). A cell belongs to the crop
containing its point (box centre for polygons); cells outside every region polygon are
counted (``outside_regions``) and kept when they fall in a crop, skipped otherwise. A
crop may not exceed :data:`cellio.images.MAX_WHOLE_PIXELS` pixels (test crops are
written whole). Boxes: a ``--box-size`` box centred on each point, the bounding box of
each polygon; a crop whose cells are all points gives the writer points.

Splits: 4:1:1 by image, or by slide with ``--group-regex`` (its first group, else its
whole match, searched in the image path, is the slide key); when there are too few
images (or slides) for the split, its regions are split instead, with a warning. A run
that writes no cell is an error that names every file and what became of its features.

Resolution (:mod:`data_prep.scaling`). ``--scale F``, ``--target-mpp T`` (each image by
its own micrometres per pixel, or ``--mpp M``, over ``T``) or ``--nucleus-size PX``
resample the written images, their points and boxes; the export's coordinates and the
options about it (``--box-size``, ``--max-cell-size``, ``--derive-regions``) stay in the
source's pixels, ``--tile`` and ``--overlap`` are pixels of the written images. Image
entries carry ``scale`` and the resampled ``mpp``.

Report (:mod:`data_prep.qupath_report`): for each export the features by object type
and what became of each (``cell: <class>``, ``region``, ``ignored area``, ``skipped:
<reason>``; a multi-point counts one object per point) is printed and written to
``OUT/qupath_report.json``, with the nuclei's box sides after resampling (``sizes``,
:func:`~data_prep.scaling.size_report`: a warning when their median does not suit the
models). Regions that lie wholly outside their image are named, with their extents and
distance, in a warning and in the error of a split left with too few regions.
"""
import dataclasses
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Optional

import numpy as np

from data_prep.points import check_points_inside, read_point_table
from data_prep.qupath_crops import source_images, split_by_region_if_needed
from data_prep.qupath_report import (REPORT_FILE, no_cell_message, raw_counts,
                                     report_lines, totals)
from data_prep.scaling import (add_scale_arguments, box_sides, image_scale,
                               nucleus_scale, rescale, size_line, size_report)
from data_prep.splits import compile_group_regex, group_of, split_groups
from data_prep.writer import add_common_arguments, command_options, write_dataset
from cellio.atomic import AtomicOutput, write_json_atomic
from cellio.geometry import box_gap, box_meets_image
from cellio.qupath import (AmbiguousClassError, PlaneError, QuPathFile, QuPathObject,
                           check_first_plane, default_color, describe_oversized,
                           drop_outside, find_images, match_exports, read_geojson,
                           shift)
from cellio.sources import IMAGE_SUFFIXES, ImageSource, open_image_source

#: Class of unclassified cells when no cell is classified.
DEFAULT_CLASS = 'cell'
#: Largest side of a polygon cell by default, in pixels (about 64 um at 0.25 um/px).
MAX_CELL_SIZE = 256
#: How the command line chooses a plane (:meth:`cellio.qupath.PlaneError.message`).
PLANE_OPTION = '--plane {z},{t}'
#: The object type of a CSV row's cell, in the report.
CSV_ROW = 'csv row'


def add_arguments(parser):
    """Options of ``prepare.py qupath``."""
    add_common_arguments(parser, tile=256, overlap=0, box_size=32, n_folds=1)
    add_scale_arguments(parser, mpp_from_images=True)
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
                        help='regex whose first group (else whole match), searched in '
                             'the image path, is the split key (slide); default: one '
                             'group per image')


# ------------------------------------------------------------------- annotations ----

@dataclass
class Annotated:
    """One image with what was read from its annotation file.

    Attributes:
        source: the image's path relative to ``--src`` (POSIX).
        display: the annotation file, for messages.
        image: the image's reader, size and QuPath frame.
        content: its cells, regions, ignored areas and skipped features, in level-0
            pixels.
        report: what became of each object (:func:`~data_prep.qupath_crops.source_images`).
        outside: the regions of the export that lie wholly outside the image
            (:func:`regions_outside`), ``None`` when none does.
    """
    source: str
    display: str
    image: ImageSource
    content: QuPathFile
    report: dict = field(default_factory=dict)
    outside: Optional[str] = None


def read_exports(src, args, requested, regions):
    """``(annotated, unused exports, images without an export)`` of ``src``."""
    images = find_images(src)
    exports, unused = match_exports(src, images)
    annotated, ambiguous = [], []
    plane = parse_plane(args.plane)
    for export, source in exports.items():
        image = open_image_source(images[source], args.frame == 'bounds')
        display = export.relative_to(src).as_posix()
        try:
            content = read_geojson(
                export, box_size=args.box_size, cell_classes=requested,
                region_classes=regions, base_class=args.base_class,
                max_cell_size=args.max_cell_size,
                unclassified_polygons=args.unclassified_polygons, plane=plane,
                display=display)
            outside = place_on_image(content, image, display, source)
        except AmbiguousClassError as err:
            ambiguous.append(err)
            continue
        except PlaneError as err:
            raise ValueError(err.message(PLANE_OPTION)) from err
        annotated.append(Annotated(source, display, image, content, outside=outside))
    if ambiguous:
        raise ValueError(ambiguity_message(ambiguous, args.max_cell_size))
    if not annotated:
        raise ValueError(f'{src}: no image with a QuPath export next to it (<stem>.geojson, '
                         '.json, .geojson.gz or .zip, named like the image)')
    return annotated, unused, len(images) - len(annotated)


def place_on_image(content, image, display, source):
    """Keep what lies on QuPath's image of ``image``, in level-0 pixels; returns the
    message of :func:`regions_outside` (also a warning and a note of the file) when
    some regions lie wholly outside the image, else ``None``.

    Raises:
        ValueError: every region of the export lies outside the image
            (:func:`check_regions_on_image`).
        PlaneError: objects lie on another plane than the first, the only one read.
    """
    size = image.frame[2:]
    check_regions_on_image(content, size, display, source)
    outside = regions_outside(content, size, display, source)
    if outside is not None:
        content.notes.append(outside)
        warnings.warn(outside, stacklevel=2)
    drop_outside(content, size)
    shift(content, *image.frame[:2])
    check_first_plane(content, display)
    return outside


def regions_outside(content, size, display, source):
    """A message naming the regions of the export that lie wholly outside QuPath's
    ``width x height`` image, each with its extent and how far beyond the image it
    lies, or ``None`` when none does (they are left out of the crops)."""
    width, height = size
    image = (0, 0, width, height)
    far = [region for region in content.regions
           if not box_meets_image(region.bounds, width, height)]
    if not far:
        return None
    described = []
    for region in far:
        x0, y0, x1, y1 = region.bounds
        dx, dy = box_gap(region.bounds, image)
        described.append(f'feature {region.feature} (x {x0:g}..{x1:g}, y {y0:g}..{y1:g}: '
                         f'{dx:g} px beyond it in x, {dy:g} px in y)')
    return (f'{display}: {len(far)} of its {len(content.regions)} region(s) lie outside '
            f'the {width}x{height} image {source} and are left out: '
            f'{"; ".join(described)}; is {display} the export of {source}? (a slide with '
            'openslide.bounds-*: see --frame)')


def check_regions_on_image(content, size, display, source):
    """Raise a ValueError when the export has regions and every one lies outside QuPath's
    ``width x height`` image (the export is another image's, or QuPath's frame is not
    ``--frame``'s): it names the file, the image and how far the nearest region lies."""
    width, height = size
    image = (0, 0, width, height)
    if not content.regions or any(box_meets_image(region.bounds, width, height)
                                  for region in content.regions):
        return
    nearest = min(content.regions,
                  key=lambda region: sum(d * d for d in box_gap(region.bounds, image)))
    dx, dy = box_gap(nearest.bounds, image)
    x0, y0, x1, y1 = nearest.bounds
    raise ValueError(
        f'{display}: every region ({len(content.regions)}) lies outside the '
        f'{width}x{height} image {source} (QuPath\'s frame); the nearest, feature '
        f'{nearest.feature} (x {x0:g}..{x1:g}, y {y0:g}..{y1:g}), lies {dx:g} px beyond it '
        f'in x and {dy:g} px in y: is {display} the export of {source}? (a slide with '
        'openslide.bounds-*: see --frame)')


def ambiguity_message(errors, max_cell_size):
    """One message for the :class:`~cellio.qupath.AmbiguousClassError` of every
    file, with the options that resolve them."""
    classes = sorted({label for err in errors for label in err.oversized})
    lines = [f'  {err.display}: {describe_oversized(err.oversized)}' for err in errors]
    return (f'annotation polygons of cell classes are larger than a cell (--max-cell-size '
            f'{max_cell_size:g} px), so they may be areas:\n' + '\n'.join(lines) +
            f'\nIf they are areas, pass --region-classes {",".join(classes)!r} (their '
            'polygons become regions); if they are cells, raise --max-cell-size above '
            'their size')


def parse_plane(text):
    """``'z,t'`` -> ``(z, t)``; ``None`` stays ``None``."""
    if text is None:
        return None
    try:
        z, t = (int(v) for v in text.split(','))
    except ValueError:
        raise ValueError(f'--plane {text!r}: expected z,t (two integers)') from None
    return z, t


def read_points(csv_path, src, box_size, use_bounds=True):
    """``annotated`` images of a CSV of points (:func:`~data_prep.points.read_point_table`):
    one cell per row, centred on its point in level-0 pixels, and no region.

    Raises:
        ValueError: an image is not an image file below ``src``, or a point lies outside
            QuPath's image (naming the file and line).
    """
    display = str(csv_path)
    annotated = []
    for source, rows in read_point_table(csv_path, display).items():
        path = Path(src) / source
        if PurePosixPath(source).is_absolute() or '..' in PurePosixPath(source).parts \
                or path.suffix.lower() not in IMAGE_SUFFIXES or not path.is_file():
            raise ValueError(f'{display} line {rows[0].line}: image {source!r} is not an '
                             f'image file below --src (suffixes {", ".join(IMAGE_SUFFIXES)})')
        image = open_image_source(path, use_bounds)
        fx, fy, width, height = image.frame
        check_points_inside([(row.x, row.y) for row in rows], width, height, display,
                            [row.line for row in rows], image=source)
        cells = [QuPathObject.at_point(row.x + fx, row.y + fy, box_size, row.label,
                                       feature=str(row.line), object_type=CSV_ROW)
                 for row in rows]
        content = QuPathFile(cells=cells, features={CSV_ROW: len(rows)})
        annotated.append(Annotated(source, display, image, content))
    return annotated


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
        annotated = read_points(args.csv, args.src, args.box_size,
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
    images, sizes = resample_images(images, args)
    split_by_region_if_needed(images, args.n_folds,
                              [entry.outside for entry in annotated if entry.outside])
    splits = split_groups([image.group for image in images], ratios=(4, 1, 1),
                          seed=args.seed, n_folds=args.n_folds)
    report = dict(files=[entry.report for entry in annotated], totals=totals(annotated),
                  classes=classes, colors={n: list(c) for n, c in colors.items()},
                  unused_files=unused, images_without_export=without_export, sizes=sizes)
    counts = raw_counts(annotated, images, unused, without_export, classes)
    protect = [args.src] + ([args.csv] if args.csv is not None else [])
    with AtomicOutput(args.out, overwrite=args.overwrite, protect=protect) as tmp:
        summary = write_dataset(
            tmp, classes, images, splits, tile=args.tile or None, overlap=args.overlap,
            box_size=args.box_size, drop_empty_tiles=args.drop_empty_tiles,
            src=args.src, total=len(images), progress=args.progress,
            options=dict(command_options(args), applied_scale=sizes['scale']))
        add_category_colors(tmp, colors)
        write_json_atomic(Path(tmp) / REPORT_FILE, report, indent=1)
    summary.update(raw=counts, colors=report['colors'], report=report, sizes=sizes)
    print('\n'.join(report_lines(annotated)))
    if unused:
        print(f'unused (no image of that name): {", ".join(unused)}')
    print('raw: ' + ', '.join(f'{k}={v}' for k, v in counts.items() if k != 'per_class'))
    print('classes: ' + ', '.join(f'{name}={counts["per_class"][name]} (rgb {colors[name]})'
                                  for name in classes))
    print(size_line(sizes))
    if sizes['warning']:
        print(f'warning: {sizes["warning"]}')
    print(f'report: {Path(args.out) / REPORT_FILE}')
    return summary


def resample_images(images, args):
    """``(images, sizes)``: every :class:`~data_prep.writer.SourceImage` with its
    ``--mpp`` (else its own) resampled by its factor
    (:func:`~data_prep.scaling.image_scale`; ``--nucleus-size`` measures the cells of
    all images first), and the :func:`~data_prep.scaling.size_report` of their cells.
    """
    measured = None
    if args.nucleus_size is not None:
        sides = [box_sides(image.cell_boxes(args.box_size)) for image in images]
        measured = nucleus_scale(np.concatenate(sides), args.nucleus_size)
    resampled, scales = [], []
    for image in images:
        mpp = args.mpp or image.mpp
        scale = image_scale(args, mpp, image.source, measured)
        resampled.append(rescale(dataclasses.replace(image, mpp=mpp), scale,
                                 args.box_size))
        scales.append(scale)
    sides = [box_sides(image.cell_boxes(args.box_size)) for image in resampled]
    return resampled, size_report(np.concatenate(sides), scales)
