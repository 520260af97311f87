"""NuCLS corrected single-rater set -> COCO files, untiled.

The protocol: docs/method.md#datasets-and-deletion; the raw layout: docs/datasets.md.

Raw layout (``--src``; one distribution nests ``rgb/rgb/``)::

    rgb/<fov>.png    field of view, ~250-400 px a side (size read from the PNG)
    csv/<fov>.csv    one nucleus per row, pandas-written (maybe a leading index column)

CSV columns used: ``raw_classification`` (older releases: ``group``),
``super_classification``, ``xmin, ymin, xmax, ymax`` (pixels of the PNG). Box =
``[xmin, ymin, xmax - xmin, ymax - ymin]`` clipped to the image. Classes by
``super_classification`` (Section 3.1.4): ``tumor_any`` -> tumor, ``sTIL`` ->
lymphocyte, ``nonTIL_stromal`` -> stromal; ``other_nucleus`` and ``AMBIGUOUS`` are not
cells of interest and are left out. Each annotation keeps its ``raw_classification``.
Images stay whole and are split 4:1:1 by slide (the FOV name up to ``_id``). Every image
entry records the FOVs' resolution, :data:`MPP` (``mpp``, µm per pixel).
"""
import csv

import numpy as np

from cellio.images import LazyImageReader, image_size
from data_prep.writer import SourceImage, add_common_arguments, write_raw_dataset

CATEGORIES = ('tumor', 'lymphocyte', 'stromal')
SUPER_CLASSES = {'tumor_any': 'tumor', 'sTIL': 'lymphocyte', 'nonTIL_stromal': 'stromal'}
NOT_OF_INTEREST = ('other_nucleus', 'AMBIGUOUS')
RAW_CLASS_COLUMNS = ('raw_classification', 'group')
BOX_COLUMNS = ('xmin', 'ymin', 'xmax', 'ymax')
#: Micrometres per pixel of the FOVs (0.2 µm/px by the dataset's documentation).
MPP = 0.2


def add_arguments(parser):
    """Options of ``prepare.py nucls``."""
    add_common_arguments(parser, tile=None, overlap=0, n_folds=1)


def _data_dir(src, name):
    """``src/name``, or ``src/name/name`` where the distribution nests it."""
    nested = src / name / name
    return nested if nested.is_dir() else src / name


def slide_name(fov, display):
    """Slide of a FOV: the part of its name before ``_id``."""
    slide, sep, _ = fov.partition('_id')
    if not sep or not slide:
        raise ValueError(f'{display}: FOV name {fov!r} has no slide part before "_id" '
                         '(expected e.g. TCGA-A2-A0SX-DX1_id-<hex>_left-...)')
    return slide


def read_fov_csv(path, display):
    """Rows of one FOV CSV: ``(raw_classification, super_classification, box, line)``.

    ``box`` is ``(xmin, ymin, xmax, ymax)`` as floats.
    """
    try:
        return _parse_fov_csv(path, display)
    except (UnicodeDecodeError, csv.Error) as err:
        raise ValueError(f'{display}: not a readable CSV file ({err})') from err


def _parse_fov_csv(path, display):
    with open(path, encoding='utf-8-sig', newline='') as f:
        reader = csv.reader(f)
        header = [name.strip() for name in next(reader, [])]
        raw_column = next((c for c in RAW_CLASS_COLUMNS if c in header), None)
        required = ['super_classification', *BOX_COLUMNS]
        missing = [c for c in required if c not in header]
        if raw_column is None:
            missing.insert(0, ' or '.join(RAW_CLASS_COLUMNS))
        if missing:
            raise ValueError(f'{display} line 1: missing column(s) {missing}; expected a '
                             f'header with raw_classification (or group), '
                             f'super_classification, {", ".join(BOX_COLUMNS)}; got {header}')
        index = {name: i for i, name in enumerate(header)}
        rows = []
        for values in reader:
            line = reader.line_num
            if not any(v.strip() for v in values):
                continue
            if len(values) != len(header):
                raise ValueError(f'{display} line {line}: expected {len(header)} fields as '
                                 f'in the header, got {len(values)}')
            try:
                box = tuple(float(values[index[c]]) for c in BOX_COLUMNS)
            except ValueError:
                box = None
            if box is None or not np.isfinite(box).all():
                raise ValueError(f'{display} line {line}: expected numbers in '
                                 f'{", ".join(BOX_COLUMNS)}, got '
                                 f'{[values[index[c]] for c in BOX_COLUMNS]}')
            rows.append((values[index[raw_column]].strip(),
                         values[index['super_classification']].strip(), box, line))
    return rows


def load_fov(src, png, csv_path):
    """``(SourceImage, stats)`` of one FOV: cells of interest as class-labelled boxes."""
    display = csv_path.relative_to(src).as_posix()
    width, height = image_size(png)
    labels, boxes, raw = [], [], []
    stats = dict(not_of_interest=0, empty_boxes=0)
    for raw_class, super_class, (x1, y1, x2, y2), line in read_fov_csv(csv_path, display):
        if super_class in NOT_OF_INTEREST:
            stats['not_of_interest'] += 1
            continue
        if super_class not in SUPER_CLASSES:
            raise ValueError(f'{display} line {line}: unknown super_classification '
                             f'{super_class!r}; expected one of '
                             f'{[*SUPER_CLASSES, *NOT_OF_INTEREST]}')
        if x2 < x1 or y2 < y1:
            raise ValueError(f'{display} line {line}: box xmin={x1:g} ymin={y1:g} '
                             f'xmax={x2:g} ymax={y2:g} has xmax < xmin or ymax < ymin')
        if x1 >= width or y1 >= height or x2 <= 0 or y2 <= 0:
            raise ValueError(f'{display} line {line}: box xmin={x1:g} ymin={y1:g} '
                             f'xmax={x2:g} ymax={y2:g} lies outside the '
                             f'{width}x{height} image {png.name}')
        cx1, cy1, cx2, cy2 = max(x1, 0), max(y1, 0), min(x2, width), min(y2, height)
        if cx2 <= cx1 or cy2 <= cy1:  # a zero-width or zero-height box
            stats['empty_boxes'] += 1
            continue
        labels.append(CATEGORIES.index(SUPER_CLASSES[super_class]) + 1)
        boxes.append((cx1, cy1, cx2 - cx1, cy2 - cy1))
        raw.append(raw_class)
    image = SourceImage(
        source=png.relative_to(src).as_posix(), group=slide_name(png.stem, display),
        reader=LazyImageReader(png), width=width, height=height, labels=labels,
        boxes=np.asarray(boxes, dtype=np.float64).reshape(-1, 4),
        extra=dict(raw_classification=raw), mpp=MPP)
    return image, stats


def load_fovs(src):
    """``(images, counts)``: a :class:`SourceImage` per FOV and the raw counts."""
    rgb_dir, csv_dir = _data_dir(src, 'rgb'), _data_dir(src, 'csv')
    for folder in (rgb_dir, csv_dir):
        if not folder.is_dir():
            raise ValueError(f'{src}: folder {folder.relative_to(src).as_posix()} not found '
                             '(expected rgb/<fov>.png and csv/<fov>.csv)')
    pngs = {p.stem: p for p in sorted(rgb_dir.glob('*.png'))}
    csvs = {p.stem: p for p in sorted(csv_dir.glob('*.csv'))}
    for name in sorted(set(pngs) ^ set(csvs)):
        have, lack = ((pngs[name], csv_dir / f'{name}.csv') if name in pngs
                      else (csvs[name], rgb_dir / f'{name}.png'))
        raise ValueError(f'{have.relative_to(src).as_posix()}: no matching '
                         f'{lack.relative_to(src).as_posix()}')
    if not pngs:
        raise ValueError(f'{rgb_dir.relative_to(src).as_posix()}: no FOV PNGs')
    images = []
    counts = dict(fovs=0, slides=0, **{c: 0 for c in CATEGORIES}, not_of_interest=0,
                  empty_boxes=0)
    for name, png in pngs.items():
        image, stats = load_fov(src, png, csvs[name])
        images.append(image)
        counts['fovs'] += 1
        for label in image.labels:
            counts[CATEGORIES[label - 1]] += 1
        for key, value in stats.items():
            counts[key] += value
    counts['slides'] = len({im.group for im in images})
    return images, counts


def prepare(args):
    """Convert ``args.src`` to ``args.out``; returns the writer summary + raw counts."""
    images, counts = load_fovs(args.src)
    return write_raw_dataset(args, CATEGORIES, images, counts)
