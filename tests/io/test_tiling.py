import numpy as np
import pytest

from cellio.tiling import crop_to_tile, point_boxes, tile_grid, tile_origins


@pytest.mark.parametrize('length, tile, overlap, expected', [
    (500, 250, 50, [0, 200, 250]),         # CRCHisto 500 px, 250 tiles, overlap 50
    (1376, 500, 100, [0, 400, 800, 876]),  # MITOS x40 frame height
    (2000, 500, 0, [0, 500, 1000, 1500]),  # TUPAC, exact fit, no overlap
    (512, 256, 0, [0, 256]),
    (300, 500, 100, [0]),                  # smaller than a tile: one short tile
    (500, 500, 100, [0]),
])
def test_tile_origins(length, tile, overlap, expected):
    origins = tile_origins(length, tile, overlap)
    assert origins == expected
    assert origins[-1] + min(tile, length) == length          # last tile flush
    assert all(b - a <= tile - overlap for a, b in zip(origins, origins[1:]))


@pytest.mark.parametrize('tile, overlap', [(0, 0), (100, 100), (100, -1)])
def test_tile_origins_rejects_bad_settings(tile, overlap):
    with pytest.raises(ValueError):
        tile_origins(500, tile, overlap)


def test_tile_grid_covers_image_row_by_row():
    grid = tile_grid(1539, 1376, 500, 100)
    assert len(grid) == 4 * 4
    assert grid[0] == (0, 0, 500, 500) and grid[3] == (1039, 0, 500, 500)
    covered = np.zeros((1376, 1539), bool)
    for x0, y0, w, h in grid:
        covered[y0:y0 + h, x0:x0 + w] = True
    assert covered.all()
    assert tile_grid(300, 200, None, 0) == [(0, 0, 300, 200)]
    assert tile_grid(300, 200, 500, 100) == [(0, 0, 300, 200)]


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
