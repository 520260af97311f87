"""Tiling of whole images and the cells that fall into each tile.

Coordinates are 0-based pixels, ``x`` = column, ``y`` = row; boxes are ``[x, y, w, h]``.
"""
import math

import numpy as np


#: An axis shorter than this many tiles is one tile (:func:`tile_spans`), so that an
#: image barely larger than a tile is not cut in two.
SINGLE_TILE_SPAN = 1.125


def tile_spans(length, tile, overlap):
    """``[(start, size), ...]`` of tiles covering ``[0, length)`` along one axis.

    As many tiles as tiles of ``tile`` pixels advancing by ``tile - overlap`` need to
    cover the axis, ``ceil((length - overlap) / (tile - overlap))``, but spread evenly:
    their sizes differ by at most a pixel and are at most ``tile``, and neighbours
    overlap by exactly ``overlap``. No tile is moved back to end flush with the border
    (it would overlap its neighbour by more than ``overlap``) and none is a sliver:
    every tile has at least ``(tile + overlap) // 2`` pixels, and an axis shorter than
    ``SINGLE_TILE_SPAN * tile`` is one tile of its length (the case of any ``length <=
    tile``).

    >>> tile_spans(1024, 256, 0)
    [(0, 256), (256, 256), (512, 256), (768, 256)]
    >>> tile_spans(337, 256, 0)
    [(0, 169), (169, 168)]
    >>> tile_spans(258, 256, 0)
    [(0, 258)]
    """
    if tile <= 0:
        raise ValueError(f'tile size must be positive, got {tile}')
    if not 0 <= overlap < tile:
        raise ValueError(f'overlap must be in [0, tile={tile}), got {overlap}')
    if length < SINGLE_TILE_SPAN * tile:
        return [(0, length)]
    count = math.ceil((length - overlap) / (tile - overlap))
    base, longer = divmod(length + (count - 1) * overlap, count)
    spans, start = [], 0
    for k in range(count):
        size = base + (k < longer)
        spans.append((start, size))
        start += size - overlap
    return spans


def tile_grid(width, height, tile, overlap):
    """Training tiles ``(x0, y0, w, h)`` covering a ``width x height`` image, row by
    row (the converters): the :func:`tile_spans` of each axis, so that no two tiles
    overlap by more than ``overlap`` in either axis. Inference: :func:`window_grid`.

    ``tile=None`` means no tiling: one tile covering the whole image.
    """
    if tile is None:
        return [(0, 0, int(width), int(height))]
    return [(x0, y0, w, h)
            for y0, h in tile_spans(height, tile, overlap)
            for x0, w in tile_spans(width, tile, overlap)]


def window_origins(length, tile, overlap):
    """Start offsets of inference windows of ``tile`` pixels covering ``[0, length)``.

    Windows advance by ``tile - overlap``; the last one is moved back to end flush with
    the border, so that every window has the full ``tile`` pixels the detector was
    trained on and windows batch without padding (it then overlaps its neighbour by more
    than ``overlap``, which inference can afford: each window keeps only the detections
    in its core, :func:`mmdet_pu.engine.runner.tile_merge.tile_cores`). A ``length <=
    tile`` is one window of ``length``. Training tiles use :func:`tile_spans` instead,
    where a cell in two near-identical tiles would be labeled in one and not the other.

    >>> window_origins(500, 250, 50)
    [0, 200, 250]
    >>> window_origins(512, 256, 64)
    [0, 192, 256]
    """
    if tile <= 0:
        raise ValueError(f'tile size must be positive, got {tile}')
    if not 0 <= overlap < tile:
        raise ValueError(f'overlap must be in [0, tile={tile}), got {overlap}')
    if length <= tile:
        return [0]
    origins = list(range(0, length - tile, tile - overlap))
    origins.append(length - tile)
    return origins


def window_grid(width, height, tile, overlap):
    """Inference windows ``(x0, y0, w, h)`` over a ``width x height`` image, row by row:
    the :func:`window_origins` of each axis (``TiledTestLoop``, slide inference)."""
    return [(x0, y0, min(tile, width), min(tile, height))
            for y0 in window_origins(height, tile, overlap)
            for x0 in window_origins(width, tile, overlap)]


def point_boxes(points_xy, box_size, width, height):
    """Fixed-size boxes centred on points, clipped to the image
    (docs/method.md#datasets-and-deletion).

    Args:
        points_xy: (N, 2) float, 0-based pixel coordinates.
        box_size: side of the square box in pixels.
        width, height: image size used for clipping.

    Returns:
        (N, 4) float boxes ``[x, y, w, h]``.
    """
    points = np.asarray(points_xy, dtype=np.float64).reshape(-1, 2)
    half = box_size / 2.0
    x1 = np.clip(points[:, 0] - half, 0, width)
    y1 = np.clip(points[:, 1] - half, 0, height)
    x2 = np.clip(points[:, 0] + half, 0, width)
    y2 = np.clip(points[:, 1] + half, 0, height)
    return np.stack([x1, y1, x2 - x1, y2 - y1], axis=1)


def box_centres(boxes_xywh):
    """(N, 2) centres of (N, 4) ``[x, y, w, h]`` boxes."""
    boxes = np.asarray(boxes_xywh, dtype=np.float64).reshape(-1, 4)
    return boxes[:, :2] + boxes[:, 2:] / 2.0


def crop_to_tile(points_xy, boxes_xywh, tile):
    """The cells of one tile, in tile coordinates.

    A cell belongs to the tile if its point (or, without points, its box centre) lies
    inside the tile, ``x0 <= x < x0 + w`` and ``y0 <= y < y0 + h``; its box is clipped to
    the tile. With overlapping tiles a cell can belong to several tiles.

    Args:
        points_xy: (N, 2) points or ``None`` (then box centres decide membership).
        boxes_xywh: (N, 4) boxes in image coordinates.
        tile: ``(x0, y0, w, h)``.

    Returns:
        ``(keep, points, boxes)``: indices of the kept cells (int array), their points
        shifted to tile coordinates (``None`` if ``points_xy`` is ``None``) and their
        boxes clipped to the tile, in tile coordinates.
    """
    x0, y0, w, h = tile
    boxes = np.asarray(boxes_xywh, dtype=np.float64).reshape(-1, 4)
    if points_xy is None:
        anchor, points = box_centres(boxes), None
    else:
        anchor = points = np.asarray(points_xy, dtype=np.float64).reshape(-1, 2)
    inside = ((anchor[:, 0] >= x0) & (anchor[:, 0] < x0 + w)
              & (anchor[:, 1] >= y0) & (anchor[:, 1] < y0 + h))
    keep = np.flatnonzero(inside)
    offset = np.array([x0, y0], dtype=np.float64)
    x1y1 = np.clip(boxes[keep, :2] - offset, 0, [w, h])
    x2y2 = np.clip(boxes[keep, :2] + boxes[keep, 2:] - offset, 0, [w, h])
    clipped = np.concatenate([x1y1, x2y2 - x1y1], axis=1)
    if points is not None:
        points = points[keep] - offset
    return keep, points, clipped
