"""Point annotations: numeric CSV files, tables of points and range checks.

MITOS-ATYPIA-14 (``x,y,score``) and TUPAC16 (``row,col``) store one object per line of a
header-less CSV file; :func:`read_number_csv` parses such a file and reports the file,
the line and the expected fields on any malformed line. :func:`read_point_table` reads a
CSV with the header ``image,x,y[,class]`` (points of the user's own images, whatever
tool marked them). :func:`check_points_inside` rejects points outside the image they
annotate.
"""
import csv
import math
from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np

#: Columns every table of points has (``class`` is optional, others are ignored).
POINT_TABLE_COLUMNS = ('image', 'x', 'y')


def read_number_csv(path, fields, display=None):
    """Rows of a header-less CSV file of numbers, as a float array.

    Blank lines (e.g. a trailing newline) are skipped; a 0-byte file gives no rows.

    Args:
        path: the CSV file.
        fields: names of the expected columns, e.g. ``('x', 'y', 'score')``.
        display: name of the file in error messages (default: ``path``).

    Returns:
        ``(rows, lines)``: ``(N, len(fields))`` float64 array and the 1-based line
        number of each row (for error messages about a row's values).

    Raises:
        ValueError: a line does not hold exactly ``len(fields)`` finite numbers.
    """
    display = display or str(path)
    rows, lines = [], []
    with open(path, encoding='utf-8-sig', newline='') as f:
        try:
            text = f.read()
        except UnicodeDecodeError as err:
            raise ValueError(f'{display}: not a text CSV file ({err})') from err
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.strip()
            if not line:
                continue
            values = [v.strip() for v in line.split(',')]
            try:
                row = [float(v) for v in values]
            except ValueError:
                row = None
            if row is None or len(row) != len(fields) or \
                    not all(math.isfinite(v) for v in row):
                raise ValueError(f'{display} line {number}: expected '
                                 f"'{','.join(fields)}' with numbers, got {line!r}")
            rows.append(row)
            lines.append(number)
    return np.asarray(rows, dtype=np.float64).reshape(-1, len(fields)), lines


@dataclass(frozen=True)
class PointRow:
    """One row of a table of points.

    Attributes:
        line: its 1-based line number in the file.
        image: the image it marks, as written (a path).
        x, y: the point, in the image's pixels.
        label: its class, ``None`` when the table has no ``class`` or it is empty.
    """
    line: int
    image: str
    x: float
    y: float
    label: Optional[str] = None


def read_point_table(path, display=None) -> Dict[str, List[PointRow]]:
    """The rows of a CSV of points, by image in order of first appearance.

    The header names the columns ``image``, ``x``, ``y`` and optionally ``class``, in any
    order (other columns are ignored); blank lines are skipped.

    Args:
        path: the CSV file (UTF-8, with or without a BOM).
        display: name of the file in error messages (default: ``path``).

    Raises:
        ValueError: naming the file and line: not a readable CSV file, a column missing
            from the header, a row with another number of fields than the header, ``x``
            or ``y`` not finite numbers, or no row at all.
    """
    display = display or str(path)
    try:
        with open(path, encoding='utf-8-sig', newline='') as f:
            rows = list(csv.reader(f))
    except (UnicodeDecodeError, csv.Error) as err:
        raise ValueError(f'{display}: not a readable CSV file ({err})') from err
    header = [name.strip() for name in rows[0]] if rows else []
    missing = [c for c in POINT_TABLE_COLUMNS if c not in header]
    if missing:
        raise ValueError(f'{display} line 1: missing column(s) {missing}; expected the '
                         f'header image,x,y[,class], got {header}')
    by_image = {}
    for line, record in _records(header, rows[1:], display):
        try:
            x, y = float(record['x']), float(record['y'])
        except ValueError:
            x = y = math.nan
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ValueError(f'{display} line {line}: expected numbers in x, y, got '
                             f'{record["x"]!r}, {record["y"]!r}')
        image, label = record['image'].strip(), record.get('class', '').strip()
        by_image.setdefault(image, []).append(PointRow(line, image, x, y, label or None))
    if not by_image:
        raise ValueError(f'{display}: no points (expected rows image,x,y[,class])')
    return by_image


def _records(header, rows, display):
    """``(line, {column: value})`` of each non-blank row below the header (line 1); a row
    must have as many fields as the header."""
    for line, values in enumerate(rows, start=2):
        if not any(value.strip() for value in values):
            continue
        if len(values) != len(header):
            raise ValueError(f'{display} line {line}: expected {len(header)} fields as in '
                             f'the header, got {len(values)}')
        yield line, dict(zip(header, values))


def check_points_inside(points_xy, width, height, display, lines=None, image=None):
    """Raise if a point ``(x, y)`` lies outside the ``width x height`` image.

    Valid points satisfy ``0 <= x < width`` and ``0 <= y < height`` (0-based pixels).

    Args:
        points_xy: (N, 2) array of 0-based ``(x, y)`` coordinates.
        width, height: image size.
        display: the annotation file, named in the error message.
        lines: line number of each point in ``display`` (default: the point's
            1-based index is reported as "entry").
        image: the image, named in the error message when given.
    """
    points = np.asarray(points_xy, dtype=np.float64).reshape(-1, 2)
    outside = ((points[:, 0] < 0) | (points[:, 0] >= width)
               | (points[:, 1] < 0) | (points[:, 1] >= height))
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        x, y = points[i]
        where = f'line {lines[i]}' if lines is not None else f'entry {i + 1}'
        named = f' {image}' if image is not None else ''
        raise ValueError(f'{display} {where}: point (x={x:g}, y={y:g}) is outside the '
                         f'{width}x{height} image{named} (expected 0 <= x < {width}, '
                         f'0 <= y < {height})')


def first_occurrences(rows):
    """Sorted indices of the first occurrence of each distinct row (drops duplicates)."""
    rows = np.asarray(rows)
    if len(rows) == 0:
        return np.zeros(0, dtype=np.int64)
    _, first = np.unique(rows, axis=0, return_index=True)
    return np.sort(first)
