import itertools

import numpy as np
import pytest

from cellio.tiling import (crop_to_tile, point_boxes, tile_grid, tile_spans, window_grid,
                           window_origins)


@pytest.mark.parametrize('length, tile, overlap, expected', [
    (500, 250, 50, [(0, 200), (150, 200), (300, 200)]),  # CRCHisto 500 px: 3 tiles
    (1376, 500, 100, [(0, 419), (319, 419), (638, 419), (957, 419)]),  # MITOS x40 height
    (1539, 500, 100, [(0, 460), (360, 460), (720, 460), (1080, 459)]),  # a pixel less
    (2000, 500, 0, [(0, 500), (500, 500), (1000, 500), (1500, 500)]),  # exact fit
    (512, 256, 0, [(0, 256), (256, 256)]),
    (337, 256, 0, [(0, 169), (169, 168)]),    # was 0 and 81: 175 px shared
    (258, 256, 0, [(0, 258)]),                # was 0 and 2: one tile, no sliver
    (287, 256, 0, [(0, 287)]),                # under 1.125 tiles: one tile
    (288, 256, 0, [(0, 144), (144, 144)]),    # 1.125 tiles: two halves
    (256, 128, 32, [(0, 107), (75, 107), (150, 106)]),
    (300, 500, 100, [(0, 300)]),              # smaller than a tile: one short tile
    (500, 500, 100, [(0, 500)]),
])
def test_tile_spans(length, tile, overlap, expected):
    spans = tile_spans(length, tile, overlap)
    assert spans == expected
    assert spans[0][0] == 0 and spans[-1][0] + spans[-1][1] == length  # all covered
    sizes = [size for _, size in spans]
    assert max(sizes) - min(sizes) <= 1
    assert len(spans) == 1 or (tile + overlap) // 2 <= min(sizes) <= max(sizes) <= tile
    for (a, size), (b, _) in zip(spans, spans[1:]):
        assert a + size - b == overlap                            # overlap as asked


@pytest.mark.parametrize('tile, overlap', [(0, 0), (100, 100), (100, -1)])
def test_tile_spans_rejects_bad_settings(tile, overlap):
    with pytest.raises(ValueError):
        tile_spans(500, tile, overlap)


def _excess_overlaps(grid, overlap):
    """The pairs of tiles of ``grid`` that overlap by more than ``overlap`` along an axis
    on which they start at different places."""
    excess = []
    for a, b in itertools.combinations(grid, 2):
        for axis in (0, 1):
            shared = min(a[axis] + a[axis + 2], b[axis] + b[axis + 2]) - max(a[axis], b[axis])
            if a[axis] != b[axis] and shared > overlap:
                excess.append((a, b))
    return excess


def test_tile_grid_of_an_image_barely_larger_than_a_tile():
    # was (0,0), (81,0), (0,2), (81,2): four near-identical tiles 2 px apart
    assert tile_grid(337, 258, 256, 0) == [(0, 0, 169, 258), (169, 0, 168, 258)]
    assert tile_grid(337, 258, 256, 32) == [(0, 0, 185, 258), (153, 0, 184, 258)]


@pytest.mark.parametrize('width, height, tile, overlap', [
    (337, 258, 256, 0), (337, 258, 256, 32), (1539, 1376, 500, 100), (500, 500, 250, 50),
    (1000, 700, 256, 64), (2000, 2000, 500, 0), (100, 900, 256, 16)])
def test_tile_grid_covers_without_excess_overlap(width, height, tile, overlap):
    grid = tile_grid(width, height, tile, overlap)
    covered = np.zeros((height, width), np.int64)
    for x0, y0, w, h in grid:
        assert x0 + w <= width and y0 + h <= height
        assert w < 1.125 * tile and h < 1.125 * tile
        covered[y0:y0 + h, x0:x0 + w] += 1
    assert covered.min() == 1                      # every pixel, at most 4 tiles deep
    assert covered.max() <= (4 if overlap else 1)
    assert _excess_overlaps(grid, overlap) == []   # in x and in y


def test_tile_grid_covers_image_row_by_row():
    grid = tile_grid(1539, 1376, 500, 100)
    assert len(grid) == 4 * 4
    assert grid[0] == (0, 0, 460, 419) and grid[3] == (1080, 0, 459, 419)
    assert grid[-1] == (1080, 957, 459, 419)
    assert tile_grid(300, 200, None, 0) == [(0, 0, 300, 200)]
    assert tile_grid(300, 200, 500, 100) == [(0, 0, 300, 200)]


@pytest.mark.parametrize('length, tile, overlap, expected', [
    (500, 250, 50, [0, 200, 250]),
    (512, 256, 64, [0, 192, 256]),
    (1024, 256, 0, [0, 256, 512, 768]),
    (200, 256, 64, [0]),
    (256, 256, 64, [0]),
])
def test_inference_windows_are_full_size_the_last_flush_with_the_border(length, tile,
                                                                        overlap, expected):
    assert window_origins(length, tile, overlap) == expected
    windows = window_grid(length, 100, tile, overlap)
    assert [(x, w) for x, _, w, _ in windows] == [(x, min(tile, length)) for x in expected]
    assert windows[-1][0] + windows[-1][2] == length


def test_point_boxes_are_centred_and_clipped():
    boxes = point_boxes([[50, 50], [2, 97.5]], 32, 100, 100)
    np.testing.assert_allclose(boxes[0], [34, 34, 32, 32])
    np.testing.assert_allclose(boxes[1], [0, 81.5, 18, 18.5])


def test_crop_to_tile_membership_by_point_and_clipping():
    points = np.array([[10., 10.], [99.9, 50.], [100., 50.], [150., 190.]])
    boxes = point_boxes(points, 32, 200, 200)
    keep, tile_points, tile_boxes = crop_to_tile(points, boxes, (0, 0, 100, 100))
    assert keep.tolist() == [0, 1]                 # x = 100 belongs to the next tile
    np.testing.assert_allclose(tile_points, points[:2])
    np.testing.assert_allclose(tile_boxes[0], [0, 0, 26, 26])  # clipped at the origin
    np.testing.assert_allclose(tile_boxes[1], [83.9, 34, 16.1, 32])  # clipped at x = 100

    keep, tile_points, tile_boxes = crop_to_tile(points, boxes, (100, 100, 100, 100))
    assert keep.tolist() == [3]
    np.testing.assert_allclose(tile_points, [[50, 90]])
    np.testing.assert_allclose(tile_boxes, [[34, 74, 32, 26]])  # clipped at the bottom


def test_crop_to_tile_uses_box_centres_without_points():
    boxes = np.array([[80., 0., 30., 10.], [85., 0., 10., 10.]])  # centres x=95, x=90
    keep, points, clipped = crop_to_tile(None, boxes, (90, 0, 50, 50))
    assert points is None
    assert keep.tolist() == [0, 1]
    np.testing.assert_allclose(clipped, [[0, 0, 20, 10], [0, 0, 5, 10]])
    keep, _, _ = crop_to_tile(None, boxes, (0, 0, 90, 50))
    assert keep.size == 0
