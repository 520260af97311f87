"""Polygons and boxes in pixel coordinates.

A polygon is a sequence of rings ``((x, y), ...)``, the exterior first and its holes
after it; a point lies inside by the even-odd rule, so holes are left out. A box is
``(x0, y0, x1, y1)``.

* :func:`points_in_polygon`, :func:`inside_any` and :func:`polygon_pixel_mask`: which
  points, and which pixels of a window (by their centre), lie inside;
* :func:`bounds` and :func:`area_bounds`: the box around points or rings;
* :func:`box_meets_image` and :func:`box_gap`: where a box lies with respect to an image
  or another box;
* :func:`merge_overlapping`: boxes merged until none overlaps another.
"""
from typing import List, Optional, Sequence, Tuple

import numpy as np

Box = Tuple[float, float, float, float]
Ring = Sequence[Tuple[float, float]]

#: Points x ring edges compared at once by :func:`points_in_polygon`.
_POINT_EDGE_PAIRS = 1 << 20


def points_in_polygon(points_xy, rings: Sequence[Ring]) -> np.ndarray:
    """Whether each ``(x, y)`` lies inside the polygon ``rings`` (even-odd rule)."""
    points = np.asarray(points_xy, dtype=np.float64).reshape(-1, 2)
    inside = np.zeros(len(points), dtype=bool)
    for ring in rings:
        ring = np.asarray(ring, dtype=np.float64)
        step = max(1, _POINT_EDGE_PAIRS // len(ring))  # bounded memory
        for start in range(0, len(points), step):
            inside[start:start + step] ^= _crosses_odd(points[start:start + step], ring)
    return inside


def _crosses_odd(points, ring):
    """Whether a ray from each point towards +x crosses ``ring`` an odd number of times."""
    x, y = points[:, :1], points[:, 1:]
    x1, y1 = ring[:, 0], ring[:, 1]
    x2, y2 = np.roll(ring[:, 0], -1), np.roll(ring[:, 1], -1)
    straddles = (y1 > y) != (y2 > y)
    dy = np.where(y2 == y1, 1.0, y2 - y1)  # horizontal edges never straddle
    x_cross = x1 + (y - y1) * (x2 - x1) / dy
    return (straddles & (x < x_cross)).sum(axis=1) % 2 == 1


def inside_any(polygons: Sequence[Sequence[Ring]], points_xy) -> np.ndarray:
    """Whether each ``(x, y)`` lies inside at least one of ``polygons``."""
    points = np.asarray(points_xy, dtype=np.float64).reshape(-1, 2)
    inside = np.zeros(len(points), dtype=bool)
    for rings in polygons:
        inside |= points_in_polygon(points, rings)
    return inside


def polygon_pixel_mask(rings: Sequence[Ring], x, y, width, height) -> np.ndarray:
    """``(height, width)`` bool: the pixels of the window at ``(x, y)`` whose centre lies
    inside the polygon ``rings`` (the rule of :func:`points_in_polygon`), one row at a
    time."""
    edges = np.concatenate([
        np.concatenate([ring, np.roll(ring, -1, axis=0)], axis=1)
        for ring in (np.asarray(r, dtype=np.float64) for r in rings)])
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


def bounds(points: Ring) -> Box:
    """The box around ``points``."""
    array = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    return (*array.min(axis=0).tolist(), *array.max(axis=0).tolist())


def area_bounds(rings: Sequence[Ring]) -> Optional[Box]:
    """The box around ``rings``, ``None`` when it has no area (all points on a line)."""
    x0, y0, x1, y1 = bounds(np.concatenate([np.asarray(r, dtype=np.float64)
                                            for r in rings]))
    return (x0, y0, x1, y1) if x1 > x0 and y1 > y0 else None


def box_meets_image(box: Box, width, height) -> bool:
    """Whether ``box`` shares a positive area with the ``width x height`` image at the
    origin."""
    x0, y0, x1, y1 = box
    return x0 < width and y0 < height and x1 > 0 and y1 > 0


def box_gap(box: Box, other: Box) -> Tuple[float, float]:
    """``(dx, dy)``: how far ``box`` lies beyond ``other`` along x and along y (0 where
    their extents overlap)."""
    dx = max(0.0, box[0] - other[2], other[0] - box[2])
    dy = max(0.0, box[1] - other[3], other[1] - box[3])
    return dx, dy


def merge_overlapping(boxes: Sequence[Box]) -> List[Box]:
    """``boxes`` with every two that share a positive area replaced by the box of their
    union, until none does."""
    boxes = list(boxes)
    while True:
        pair = next(((i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
                     if _overlap(boxes[i], boxes[j])), None)
        if pair is None:
            return boxes
        other = boxes.pop(pair[1])
        boxes[pair[0]] = _union(boxes[pair[0]], other)


def _overlap(a, b):
    """Whether two boxes share a positive area."""
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def _union(a, b):
    """The box around two boxes."""
    return min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])
