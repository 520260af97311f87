"""TUPAC16 auxiliary mitosis data, cases 01-23 -> COCO patches.

The protocol: docs/method.md#datasets-and-deletion; the raw layout: docs/datasets.md.

Raw layout (``--src``)::

    mitoses_image_data_part_1/01/01.tif              2000 x 2000 RGB tile (part folder
                                                      also mitoses_train_image_data_part_N)
    mitoses_ground_truth/01/01.csv                   original labels: row,col (y, x!)
    TUPAC_AL/mitoses_ground_truth/01/01.csv          alternative labels (Bertram et al.)

Label CSVs have no header, one 0-based ``row,col`` per line; a tile without mitoses may
have no CSV at all (empty). The alternative labels are the complete annotations (the
default, ``--labels alternative``); every such annotation carries ``original`` (whether
an original label lies within ``--match-radius`` pixels, one-to-one), so a deletion
scheme can start from the original, incomplete labels
(docs/method.md#datasets-and-deletion). ``--labels original`` uses the original labels
instead. Each mitosis becomes a 32 x 32 box centred on it; tiles
are cut into 500 x 500 patches without overlap, patches without mitoses are dropped, and
cases are split 4:1:1 (Section 3.1.3). Tiles are read region by region
(:class:`cellio.tiff.TiffRegionReader`), never whole unless written as a whole
test image. Every image entry records the tiles' resolution, :data:`MPP` (``mpp``, µm
per pixel).
"""
import re
from pathlib import Path

import numpy as np

from cellio.images import LazyImageReader, image_size
from data_prep.folders import unique_folders
from data_prep.points import check_points_inside, read_number_csv
from data_prep.writer import SourceImage, add_common_arguments, write_raw_dataset

CATEGORIES = ('mitosis',)
PART_PATTERN = re.compile(r'mitoses(_train)?_image_data_part_\d+')
CASE_PATTERN = re.compile(r'\d{2}')
CSV_FIELDS = ('row', 'col')
#: Micrometres per pixel of the tiles (40x, 0.25 µm/px by the challenge's documentation).
MPP = 0.25


def parse_cases(text):
    """Case names from ``'1-23'`` / ``'01,03,10-12'`` -> ``['01', '02', ...]``."""
    cases = []
    for part in text.split(','):
        match = re.fullmatch(r'\s*(\d+)\s*(?:-\s*(\d+)\s*)?', part)
        if match is None:
            raise ValueError(f'--cases {text!r}: expected numbers and ranges like 1-23 or '
                             '1,3,10-12')
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if first > last:
            raise ValueError(f'--cases {text!r}: empty range {part.strip()}')
        cases.extend(f'{case:02d}' for case in range(first, last + 1))
    return sorted(set(cases))


def add_arguments(parser):
    """Options of ``prepare.py tupac``."""
    add_common_arguments(parser, tile=500, overlap=0, box_size=32, n_folds=1,
                         drop_empty_tiles=True)
    parser.add_argument('--cases', type=parse_cases, default=parse_cases('1-23'),
                        help='cases to convert, e.g. 1-23 (default: the first centre, '
                             '1-23)')
    parser.add_argument('--labels', choices=('alternative', 'original'),
                        default='alternative',
                        help='annotations to write: the alternative (complete) labels of '
                             'Bertram et al. or the original (incomplete) ones '
                             '(default alternative)')
    parser.add_argument('--alternative-dir', type=Path, default=None,
                        help='folder of the alternative label CSVs <case>/<tile>.csv '
                             '(default SRC/TUPAC_AL/mitoses_ground_truth)')
    parser.add_argument('--match-radius', type=float, default=30.0,
                        help='max distance (pixels) at which an alternative label counts '
                             'as one of the original labels (default 30, the challenge '
                             'criterion)')


def _display(path, src):
    """``path`` relative to ``src`` when below it (for messages), else as given."""
    try:
        return path.relative_to(src).as_posix()
    except ValueError:
        return str(path)


def find_case_dirs(src, cases):
    """``{case: folder}`` of the selected cases in the image part folders."""
    parts = sorted(p for p in src.iterdir() if p.is_dir() and PART_PATTERN.fullmatch(p.name))
    if not parts:
        raise ValueError(f'{src}: no mitoses_image_data_part_N folder (expected e.g. '
                         'mitoses_image_data_part_1/01/01.tif)')
    found = unique_folders((folder for part in parts for folder in sorted(part.iterdir())),
                           CASE_PATTERN, 'case', lambda folder: _display(folder, src))
    missing = [case for case in cases if case not in found]
    if missing:
        raise ValueError(f'{src}: cases {missing} not found in '
                         f'{[p.name for p in parts]}')
    return {case: found[case] for case in cases}


def read_label_dir(label_root, case, tiles, src):
    """``{tile: (points, origin)}`` of one case's label CSVs.

    ``points`` is (N, 2) x/y (the CSVs hold row, col); ``origin`` is ``(display path,
    line numbers)`` for error messages, or ``None`` for a tile without CSV (no labels).
    A CSV without a matching image tile is an error.
    """
    folder = label_root / case
    labels = {tile: (np.zeros((0, 2)), None) for tile in tiles}
    if not folder.is_dir():
        return labels
    for path in sorted(folder.glob('*.csv')):
        display = _display(path, src)
        if path.stem not in labels:
            raise ValueError(f'{display}: no image tile {path.stem}.tif in case {case}')
        rows, lines = read_number_csv(path, CSV_FIELDS, display)
        points = rows[:, ::-1].copy()  # row, col -> x, y
        labels[path.stem] = (points, (display, lines))
    return labels


def match_points(points, reference, radius):
    """Boolean mask over ``points``: matched one-to-one to a ``reference`` point.

    Pairs are taken greedily by increasing distance, each point and reference point at
    most once, up to ``radius`` pixels.
    """
    matched = np.zeros(len(points), dtype=bool)
    if len(points) == 0 or len(reference) == 0:
        return matched
    distance = np.linalg.norm(points[:, None, :] - reference[None, :, :], axis=2)
    pairs = np.argwhere(distance <= radius)
    order = np.argsort(distance[pairs[:, 0], pairs[:, 1]], kind='stable')
    used = set()
    for i, j in pairs[order]:
        if not matched[i] and j not in used:
            matched[i] = True
            used.add(j)
    return matched


def load_tiles(src, cases, labels='alternative', alternative_dir=None, match_radius=30.0):
    """``(tiles, counts)``: a :class:`SourceImage` per 2000 x 2000 tile and raw counts."""
    original_root = src / 'mitoses_ground_truth'
    alternative_root = (src / 'TUPAC_AL' / 'mitoses_ground_truth' if alternative_dir is None
                        else alternative_dir)
    roots = dict(original=original_root)
    if labels == 'alternative':
        roots['alternative'] = alternative_root
    for name, root in roots.items():
        if not root.is_dir():
            raise ValueError(f'{_display(root, src)}: {name} label folder not found')
    images, counts = [], dict(cases=len(cases), tiles=0, tiles_without_original_csv=0,
                              original_labels=0)
    if labels == 'alternative':
        counts.update(alternative_labels=0, alternative_in_original=0)
    for case, folder in find_case_dirs(src, cases).items():
        paths = {p.stem: p for p in sorted(folder.iterdir())
                 if p.suffix.lower() in ('.tif', '.tiff')}
        if not paths:
            raise ValueError(f'{_display(folder, src)}: no TIFF tiles')
        sets = {name: read_label_dir(root, case, paths, src) for name, root in roots.items()}
        for tile, path in paths.items():
            width, height = image_size(path)
            points = {}
            for name, tile_labels in sets.items():
                points[name], origin = tile_labels[tile]
                if origin is not None:
                    check_points_inside(points[name], width, height, *origin)
            counts['tiles'] += 1
            counts['tiles_without_original_csv'] += sets['original'][tile][1] is None
            counts['original_labels'] += len(points['original'])
            extra = {}
            if labels == 'alternative':
                in_original = match_points(points['alternative'], points['original'],
                                           match_radius)
                extra['original'] = in_original
                counts['alternative_labels'] += len(in_original)
                counts['alternative_in_original'] += int(in_original.sum())
            used = points[labels]
            images.append(SourceImage(
                source=_display(path, src), group=case, reader=LazyImageReader(path),
                width=width, height=height, labels=np.ones(len(used)), points=used,
                extra=extra, mpp=MPP))
    return images, counts


def prepare(args):
    """Convert ``args.src`` to ``args.out``; returns the writer summary + raw counts."""
    tiles, counts = load_tiles(args.src, args.cases, labels=args.labels,
                               alternative_dir=args.alternative_dir,
                               match_radius=args.match_radius)
    return write_raw_dataset(args, CATEGORIES, tiles, counts)
