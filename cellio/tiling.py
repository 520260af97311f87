"""Tiling of whole images and the cells that fall into each tile.

Coordinates are 0-based pixels, ``x`` = column, ``y`` = row; boxes are ``[x, y, w, h]``.
"""
import numpy as np


def tile_origins(length, tile, overlap):
    """Start offsets of tiles of size ``tile`` covering ``[0, length)``.

    Tiles advance by ``tile - overlap``; the last tile is moved back so that it ends
    flush with ``length`` (it then overlaps its neighbour more than ``overlap``). A
    ``length <= tile`` gives the single tile ``[0]`` (that tile is ``length`` long).

    >>> tile_origins(500, 250, 50)
    [0, 200, 250]
    >>> tile_origins(1376, 500, 100)
    [0, 400, 800, 876]
    """
    if tile <= 0:
        raise ValueError(f'tile size must be positive, got {tile}')
    if not 0 <= overlap < tile:
        raise ValueError(f'overlap must be in [0, tile={tile}), got {overlap}')
    if length <= tile:
        return [0]
    stride = tile - overlap
    origins = list(range(0, length - tile, stride))
    origins.append(length - tile)
    return origins


def tile_grid(width, height, tile, overlap):
    """Tiles ``(x0, y0, w, h)`` covering a ``width x height`` image, row by row.

    ``tile=None`` means no tiling: one tile covering the whole image.
    """
    if tile is None:
        return [(0, 0, int(width), int(height))]
    return [(x0, y0, min(tile, width), min(tile, height))
            for y0 in tile_origins(height, tile, overlap)
            for x0 in tile_origins(width, tile, overlap)]


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
