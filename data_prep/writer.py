"""Write a converted dataset in the layout of docs/design.md.

Every dataset module (``mitos14``, ``crchisto``, ``tupac``, ``nucls``, ``synthetic``)
only describes its whole source images; this module tiles them, writes the PNGs and the
COCO files of every fold, atomically (nothing is left half-written on an error).

Dataset module contract (used by ``prepare.py``)
------------------------------------------------
A dataset module ``data_prep/<name>.py`` exposes

    add_arguments(parser)   # its options; call add_common_arguments(parser, ...) in it
    prepare(args) -> dict   # returns the summary of write_dataset / write_from_args

``args`` always has ``src`` (raw directory, ``None`` for synthetic), ``out``,
``overwrite`` and ``progress`` (added by prepare.py), plus the options the module added.

What a converter yields: :class:`SourceImage`
---------------------------------------------
One per whole raw image::

    SourceImage(
        source='A03/frames/x40/A03_00Aa.tiff',  # path relative to --src, POSIX, unique
        group='A03',                            # split key: slide / case / image
        reader=reader,                          # read_region(x0, y0, w, h) -> RGB uint8
        width=1539, height=1376,                # full image size in pixels
        labels=[1, 1],                          # (N,) category ids in 1..C
        points=[[x, y], ...],                   # (N, 2) 0-based, x = column; or None
        boxes=None,                             # (N, 4) [x, y, w, h]; or None
        extra={'score': [0.8, 1.0]},            # per-annotation fields, each length N
        mpp=0.2455,                             # micrometres per pixel, None if unknown
        origin=None,                            # (X, Y) of a part of the source, below
        scale=1.0)                              # resampled by it from the source

* Give ``points`` (point-annotated data: the writer makes ``box_size`` boxes centred on
  them, clipped to the image) or ``boxes`` (box-annotated data, clipped to the image), or
  both. Points must lie inside the image, ``0 <= x < width``, ``0 <= y < height``.
  Boxes must keep a positive width and height after clipping. ``N = 0`` is allowed.
* ``reader`` is any object with ``read_region(x0, y0, w, h)`` returning an (h, w, 3)
  uint8 RGB array, and optionally ``close()`` (called when the image is done). Use
  :class:`cellio.images.ImageFileReader` / :class:`~cellio.images.ArrayReader`
  for ordinary images; whole images are never read at once unless they are test images
  (written whole for tiled evaluation) or a single tile.
* ``extra`` values must be JSON-serialisable numbers/strings (numpy scalars are
  converted); they are stored on every annotation (``score`` for MITOS agreement).
* ``origin``: when the image is a part (a region) of ``source``, the level-0 pixel of
  ``source`` at its top-left corner; ``reader``, ``width``, ``height``, ``points`` and
  ``boxes`` are then those of the part. Several parts of one source may be given (each
  ``(source, origin)`` once); ``None`` means the whole source.
* ``scale``: the image was resampled by this factor from ``source``
  (:func:`data_prep.scaling.rescale`): ``width``, ``height``, ``points``, ``boxes`` and
  ``mpp`` are those of the resampled image, ``origin`` stays in level-0 pixels of
  ``source``.

Writing
-------
::

    splits = split_groups(groups, ratios=(4, 1, 1), seed=args.seed, n_folds=args.n_folds)
    summary = write_from_args(args, categories=['mitosis'], images=iter_images(...),
                              splits=splits, total=n_images)

:func:`write_from_args` is :func:`write_dataset` with ``tile``, ``overlap``,
``box_size``, ``drop_empty_tiles`` (from :func:`add_common_arguments`) and ``out``,
``src``, ``overwrite``, ``progress`` taken from ``args``. ``images`` may be a generator:
it is consumed once, one image at a time; ``splits`` (from
:func:`data_prep.splits.split_groups`) must therefore be computed beforehand from the
group keys, and every image's group must be in it.

Output (``OUT``)
----------------
* ``images/tiles/<source without suffix>_x<x0>_y<y0>.png``: every tile of every image
  (a tile covering the whole image is the whole-image PNG instead);
* ``images/whole/<source without suffix>.png`` (a part: ``..._x<X>_y<Y>.png``): the
  images that are test images in at least one fold;
* ``annotations/fold<k>/{train,val,test}.json``: tiles of the images of that split;
  ``file_name`` is relative to ``images/`` (``data_prefix=dict(img='images/')``); image
  entries carry ``source``, ``x0``, ``y0`` (the image's top-left pixel in ``source``,
  level-0 pixels: a pixel ``(x, y)`` of the image is ``(x0 + x, y0 + y)`` of the
  source), ``width``, ``height`` (and ``mpp``, the source's micrometres per pixel, when
  the converter knows it) and ``scale`` (the factor the image was resampled by from
  ``source``, when not 1: a pixel ``(x, y)`` of the image is then ``(x0 + x / scale,
  y0 + y / scale)`` of the source); annotations
  ``bbox`` (clipped to the tile), ``category_id``, ``point`` (tile coordinates, when
  points were given) and the ``extra`` fields. A cell belongs to every tile containing
  its point (box centre without points);
* ``annotations/fold<k>/test_whole.json``: whole test images (``x0, y0`` = the origin,
  ``0, 0`` for a whole source) with ``tiles`` = ``[[x, y, w, h], ...]`` (the full tile
  grid, in pixels of the whole image's PNG) and annotations in its coordinates;
* ``splits.json``: the :func:`~data_prep.splits.split_groups` result;
* ``prepare.json``: the command's options (:func:`command_options`: the dataset and every
  option as parsed, defaults included), so that two conversions that differ only in an
  option (``--stretch``, ``--percentiles``, ``--tile``) are told apart.

``drop_empty_tiles`` (TUPAC) leaves tiles without cells out of train/val/test json and
PNGs; ``test_whole.json`` still lists the full grid.
"""
from dataclasses import dataclass, field
from pathlib import Path, PurePath, PurePosixPath
from typing import Any, Optional, Tuple

import numpy as np
from tqdm import tqdm

from data_prep.coco_io import CocoBuilder
from data_prep.splits import SPLITS, split_groups
from cellio.atomic import AtomicOutput, write_image_atomic, write_json_atomic
from cellio.tiling import crop_to_tile, point_boxes, tile_grid

ANNOTATION_FILES = (*SPLITS, 'test_whole')


@dataclass
class SourceImage:
    """One whole raw image with its complete annotations (see the module docstring)."""
    source: str
    group: str
    reader: Any
    width: int
    height: int
    labels: Any
    points: Optional[Any] = None
    boxes: Optional[Any] = None
    extra: dict = field(default_factory=dict)
    mpp: Optional[float] = None
    origin: Optional[Tuple[int, int]] = None
    scale: float = 1.0

    def __post_init__(self):
        path = PurePosixPath(self.source)
        if path.is_absolute() or '..' in path.parts or not path.suffix:
            raise ValueError(f'source {self.source!r} must be a relative file path below '
                             '--src, without ".."')
        self.width, self.height = int(self.width), int(self.height)
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f'{self.source}: image size {self.width}x{self.height} '
                             'must be positive')
        self.labels = np.asarray(self.labels, dtype=np.int64).reshape(-1)
        n = len(self.labels)
        if self.points is None and self.boxes is None:
            raise ValueError(f'{self.source}: give points or boxes (or both)')
        if self.points is not None:
            self.points = self._array('points', self.points, 2, n)
            x, y = self.points[:, 0], self.points[:, 1]
            outside = np.flatnonzero((x < 0) | (x >= self.width)
                                     | (y < 0) | (y >= self.height))
            if len(outside):
                i = outside[0]
                raise ValueError(f'{self.source}: point {i} at {self.points[i].tolist()} '
                                 f'is outside the {self.width}x{self.height} image')
        if self.boxes is not None:
            boxes = self._array('boxes', self.boxes, 4, n)
            x1 = np.clip(boxes[:, 0], 0, self.width)
            y1 = np.clip(boxes[:, 1], 0, self.height)
            x2 = np.clip(boxes[:, 0] + boxes[:, 2], 0, self.width)
            y2 = np.clip(boxes[:, 1] + boxes[:, 3], 0, self.height)
            self.boxes = np.stack([x1, y1, x2 - x1, y2 - y1], axis=1)
            empty = np.flatnonzero((self.boxes[:, 2] <= 0) | (self.boxes[:, 3] <= 0))
            if len(empty):
                i = empty[0]
                raise ValueError(f'{self.source}: box {i} {boxes[i].tolist()} has no area '
                                 f'inside the {self.width}x{self.height} image')
        if self.origin is not None:
            x, y = (int(v) for v in self.origin)
            if x < 0 or y < 0:
                raise ValueError(f'{self.source}: origin {tuple(self.origin)} must be '
                                 'non-negative level-0 pixels')
            self.origin = (x, y)
        if not float(self.scale) > 0:
            raise ValueError(f'{self.source}: scale must be positive, got {self.scale!r}')
        if self.mpp is not None and not float(self.mpp) > 0:
            raise ValueError(f'{self.source}: mpp (micrometres per pixel) must be '
                             f'positive, got {self.mpp!r}')
        for key, values in self.extra.items():
            if len(values) != n:
                raise ValueError(f'{self.source}: extra field {key!r} has {len(values)} '
                                 f'values for {n} labels')

    def _array(self, name, values, columns, n):
        array = np.asarray(values, dtype=np.float64)
        if array.size == 0:
            array = array.reshape(0, columns)
        if array.ndim != 2 or array.shape != (n, columns):
            raise ValueError(f'{self.source}: {name} must have shape ({n}, {columns}) to '
                             f'match {n} labels, got {array.shape}')
        return array

    def cell_boxes(self, box_size):
        """Boxes ``[x, y, w, h]`` of all cells: given boxes, else point boxes."""
        if self.boxes is not None:
            return self.boxes
        if box_size is None or box_size <= 0:
            raise ValueError(f'{self.source}: point annotations need a positive box_size')
        return point_boxes(self.points, box_size, self.width, self.height)

    def extra_fields(self, i):
        """The ``extra`` fields of annotation ``i`` as plain Python values."""
        return {key: np.asarray(values[i]).item() for key, values in self.extra.items()}


def add_common_arguments(parser, tile, overlap, box_size=None, n_folds=1, seed=0,
                         drop_empty_tiles=False):
    """Add the tiling/split options every dataset module shares, with its defaults.

    Options: ``--tile`` (0 = no tiling), ``--overlap``, ``--box-size`` (point data only),
    ``--seed``, ``--n-folds`` (the random split; ``n_folds=None`` leaves both out, for a
    converter whose folds are fixed), ``--drop-empty-tiles``/``--keep-empty-tiles``.
    """
    parser.add_argument('--tile', type=int, default=tile or 0,
                        help='tile size in pixels, 0 = keep images whole '
                             f'(default {tile or 0})')
    parser.add_argument('--overlap', type=int, default=overlap,
                        help=f'overlap of neighbouring tiles in pixels (default {overlap})')
    if box_size is not None:
        parser.add_argument('--box-size', type=float, default=box_size,
                            help='side of the square box around each point annotation '
                                 f'(default {box_size})')
    if n_folds is not None:
        parser.add_argument('--seed', type=int, default=seed,
                            help=f'seed of the split (default {seed})')
        parser.add_argument('--n-folds', type=int, default=n_folds,
                            help=f'cross-validation folds with a fixed val set (default '
                                 f'{n_folds})')
    group = parser.add_mutually_exclusive_group()
    group.add_argument('--drop-empty-tiles', dest='drop_empty_tiles', action='store_true',
                       help='leave tiles without cells out of train/val/test' +
                            (' (default)' if drop_empty_tiles else ''))
    group.add_argument('--keep-empty-tiles', dest='drop_empty_tiles', action='store_false',
                       help='keep tiles without cells' +
                            ('' if drop_empty_tiles else ' (default)'))
    parser.set_defaults(drop_empty_tiles=drop_empty_tiles)


def command_options(args):
    """The parsed options of a conversion as JSON values (paths as strings), without
    those that do not change what is written (``overwrite``, ``progress``)."""
    def plain(value):
        if isinstance(value, PurePath):
            return str(value)
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    return {key: plain(value) for key, value in sorted(vars(args).items())
            if key not in ('overwrite', 'progress')}


def write_from_args(args, categories, images, splits, total=None):
    """:func:`write_dataset` configured by the options of :func:`add_common_arguments`."""
    return write_dataset(
        args.out, categories, images, splits, tile=args.tile or None,
        overlap=args.overlap, box_size=getattr(args, 'box_size', None),
        drop_empty_tiles=args.drop_empty_tiles, overwrite=args.overwrite,
        src=args.src, total=total, progress=args.progress, options=command_options(args))


def write_raw_dataset(args, categories, images, counts):
    """Split loaded raw images 4:1:1 by group and write them (the real converters' end).

    Args:
        args: options of :func:`add_common_arguments` (``seed``, ``n_folds``, ...).
        categories: class names.
        images: list of :class:`SourceImage` with their ``group`` (slide, case, image).
        counts: raw counts of the converter, added to the summary as ``raw`` and printed.
    """
    splits = split_groups([im.group for im in images], ratios=(4, 1, 1), seed=args.seed,
                          n_folds=args.n_folds)
    summary = write_from_args(args, categories, images, splits, total=len(images))
    summary['raw'] = counts
    print('raw: ' + ', '.join(f'{k}={v}' for k, v in counts.items()))
    return summary


def write_dataset(out_dir, categories, images, splits, tile, overlap=0, box_size=None,
                  drop_empty_tiles=False, overwrite=False, src=None, total=None,
                  progress=True, options=None):
    """Tile ``images`` and write images, COCO files and splits.json to ``out_dir``.

    Args:
        out_dir: output directory, written atomically (:class:`AtomicOutput`).
        categories: class names; ``SourceImage.labels`` index them from 1.
        images: iterable of :class:`SourceImage`, consumed once.
        splits: result of :func:`data_prep.splits.split_groups` over the image groups.
        tile: tile size, or ``None`` to keep images whole.
        overlap: overlap of neighbouring tiles.
        box_size: box side for point annotations.
        drop_empty_tiles: leave tiles without cells out (TUPAC).
        overwrite: replace an existing ``out_dir``.
        src: raw data directory, or a list of them; never written to (``out_dir`` may
            not overlap one).
        total: number of images, for the progress bar.
        progress: show a tqdm progress bar.
        options: the conversion's options (:func:`command_options`), written as
            ``prepare.json``; ``None`` writes none.

    Returns:
        summary dict: ``images`` (source images), ``tile_images`` (tile PNGs written),
        ``whole_images`` (whole PNGs written) and ``folds``: per fold and annotation file,
        ``images``, ``annotations`` and ``per_class`` counts.
    """
    assignment = splits['assignment']
    n_folds = len(splits['folds'])
    builders = [{name: CocoBuilder(categories) for name in ANNOTATION_FILES}
                for _ in range(n_folds)]
    counts = dict(images=0, tile_images=0, whole_images=0)
    seen = set()
    protect = src if isinstance(src, (list, tuple)) else [src]
    with AtomicOutput(out_dir, overwrite=overwrite, protect=protect) as tmp:
        for image in tqdm(images, total=total, desc='images', unit='img',
                          disable=not progress):
            key = (image.source, image.origin)
            if key in seen:
                where = '' if image.origin is None else f' at origin {image.origin}'
                raise ValueError(f'source {image.source!r}{where} is given twice')
            seen.add(key)
            if image.group not in assignment:
                raise ValueError(f'{image.source}: group {image.group!r} is not in the '
                                 'splits (compute split_groups over all image groups)')
            bad = np.flatnonzero((image.labels < 1) | (image.labels > len(categories)))
            if len(bad):
                raise ValueError(f'{image.source}: label {image.labels[bad[0]]} of cell '
                                 f'{bad[0]} is not a category id in 1..{len(categories)}')
            _write_image(tmp, image, assignment[image.group], builders, tile, overlap,
                         box_size, drop_empty_tiles, counts)
            close = getattr(image.reader, 'close', None)
            if close is not None:
                close()
        summary = dict(counts, folds=[])
        for k, fold in enumerate(builders):
            summary['folds'].append({})
            for name, builder in fold.items():
                coco = builder.to_dict()
                write_json_atomic(tmp / 'annotations' / f'fold{k}' / f'{name}.json', coco)
                summary['folds'][k][name] = _count(coco, categories)
        write_json_atomic(tmp / 'splits.json', splits)
        if options is not None:
            write_json_atomic(tmp / 'prepare.json', options, indent=1)
    return summary


def _write_image(root, image, fold_splits, builders, tile, overlap, box_size,
                 drop_empty_tiles, counts):
    """Write the tiles (and whole PNG of a test image) of one image; fill the builders."""
    stem = str(PurePosixPath(image.source).with_suffix(''))
    ox, oy = image.origin or (0, 0)
    whole_name = f'whole/{stem}.png' if image.origin is None else \
        f'whole/{stem}_x{ox}_y{oy}.png'
    boxes = image.cell_boxes(box_size)
    grid = tile_grid(image.width, image.height, tile, overlap)
    counts['images'] += 1
    if 'test' in fold_splits or grid == [(0, 0, image.width, image.height)]:
        write_image_atomic(Path(root) / 'images' / whole_name,
                           image.reader.read_region(0, 0, image.width, image.height))
        counts['whole_images'] += 1
    for x0, y0, w, h in grid:
        keep, points, tile_boxes = crop_to_tile(image.points, boxes, (x0, y0, w, h))
        if drop_empty_tiles and len(keep) == 0:
            continue
        if (x0, y0, w, h) == (0, 0, image.width, image.height):
            file_name = whole_name
        else:
            sx, sy = _in_source(image, x0, y0)
            file_name = f'tiles/{stem}_x{sx}_y{sy}.png'
            write_image_atomic(Path(root) / 'images' / file_name,
                               image.reader.read_region(x0, y0, w, h))
            counts['tile_images'] += 1
        for fold, split in zip(builders, fold_splits):
            _add(fold[split], image, file_name, (x0, y0, w, h), keep, points, tile_boxes)
    for fold, split in zip(builders, fold_splits):
        if split == 'test':
            _add(fold['test_whole'], image, whole_name, (0, 0, image.width, image.height),
                 np.arange(len(image.labels)), image.points, boxes,
                 tiles=[list(t) for t in grid])


def _in_source(image, x, y):
    """The level-0 pixel of ``image.source`` at the pixel ``(x, y)`` of ``image``."""
    ox, oy = image.origin or (0, 0)
    return ox + round(x / image.scale), oy + round(y / image.scale)


def _add(builder, image, file_name, tile, keep, points, boxes, **image_extra):
    x0, y0, w, h = tile
    if image.mpp is not None:
        image_extra['mpp'] = float(image.mpp)
    if image.scale != 1:
        image_extra['scale'] = float(image.scale)
    sx, sy = _in_source(image, x0, y0)
    image_id = builder.add_image(file_name, w, h, image.source, x0=sx, y0=sy,
                                 **image_extra)
    for j, i in enumerate(keep):
        builder.add_annotation(
            image_id, boxes[j], int(image.labels[i]),
            point=None if points is None else points[j], **image.extra_fields(i))


def _count(coco, categories):
    """Images, annotations and cells per class of a COCO dict; ignored regions
    (``iscrowd``) are counted apart (``ignored``, only when there are some)."""
    per_class = {name: 0 for name in categories}
    ignored = 0
    for ann in coco['annotations']:
        if ann.get('iscrowd'):
            ignored += 1
        else:
            per_class[categories[ann['category_id'] - 1]] += 1
    counts = dict(images=len(coco['images']), annotations=len(coco['annotations']),
                  per_class=per_class)
    if ignored:
        counts['ignored'] = ignored
    return counts


def format_summary(summary):
    """Human-readable table of a :func:`write_dataset` summary."""
    lines = [f"source images: {summary['images']}, tile PNGs: {summary['tile_images']}, "
             f"whole PNGs: {summary['whole_images']}"]
    for k, fold in enumerate(summary['folds']):
        for name, c in fold.items():
            classes = ', '.join(f'{cls}={n}' for cls, n in c['per_class'].items())
            if c.get('ignored'):
                classes += f', ignored={c["ignored"]}'
            lines.append(f'fold{k} {name:<10} images={c["images"]:<6} '
                         f'annotations={c["annotations"]:<7} ({classes})')
    return '\n'.join(lines)
