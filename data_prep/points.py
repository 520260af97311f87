"""Point annotations of the raw datasets: numeric CSV files and range checks.

MITOS-ATYPIA-14 (``x,y,score``) and TUPAC16 (``row,col``) store one object per line of a
header-less CSV file; :func:`read_number_csv` parses such a file and reports the file,
the line and the expected fields on any malformed line. :func:`check_points_inside`
rejects points outside the image they annotate.
"""
import math

import numpy as np


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


def check_points_inside(points_xy, width, height, display, lines=None):
    """Raise if a point ``(x, y)`` lies outside the ``width x height`` image.

    Valid points satisfy ``0 <= x < width`` and ``0 <= y < height`` (0-based pixels).

    Args:
        points_xy: (N, 2) array of 0-based ``(x, y)`` coordinates.
        width, height: image size.
        display: the annotation file, named in the error message.
        lines: line number of each point in ``display`` (default: the point's
            1-based index is reported as "entry").
    """
    points = np.asarray(points_xy, dtype=np.float64).reshape(-1, 2)
    outside = ((points[:, 0] < 0) | (points[:, 0] >= width)
               | (points[:, 1] < 0) | (points[:, 1] >= height))
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        x, y = points[i]
        where = f'line {lines[i]}' if lines is not None else f'entry {i + 1}'
        raise ValueError(f'{display} {where}: point (x={x:g}, y={y:g}) is outside the '
                         f'{width}x{height} image (expected 0 <= x < {width}, '
                         f'0 <= y < {height})')


def first_occurrences(rows):
    """Sorted indices of the first occurrence of each distinct row (drops duplicates)."""
    rows = np.asarray(rows)
    if len(rows) == 0:
        return np.zeros(0, dtype=np.int64)
    _, first = np.unique(rows, axis=0, return_index=True)
    return np.sort(first)
