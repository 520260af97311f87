"""Polygons and boxes (cellio/geometry.py)."""
import numpy as np

from cellio.geometry import (area_bounds, bounds, box_gap, box_meets_image,
                             inside_any, merge_overlapping, points_in_polygon,
                             polygon_pixel_mask)

SQUARE = ((0, 0), (100, 0), (100, 60), (0, 60))
HOLE = ((10, 10), (40, 10), (40, 40), (10, 40))


def test_points_inside_a_polygon_with_a_hole_and_inside_any():
    points = [[5, 5], [20, 20], [99, 59], [101, 5], [50, -1], [70, 30]]
    assert points_in_polygon(points, (SQUARE, HOLE)).tolist() == [
        True, False, True, False, False, True]
    triangle = ((200, 0), (210, 0), (200, 10))
    assert inside_any([(SQUARE, HOLE), (triangle, )], points + [[202, 2]]).tolist() == [
        True, False, True, False, False, True, True]
    assert inside_any([], points).tolist() == [False] * 6


def test_pixel_mask_follows_the_point_rule_at_pixel_centres():
    mask = polygon_pixel_mask((SQUARE, HOLE), 5, 5, 50, 40)
    ys, xs = np.mgrid[0:40, 0:50]
    centres = np.stack([xs.ravel() + 5.5, ys.ravel() + 5.5], axis=1)
    assert np.array_equal(mask.ravel(), points_in_polygon(centres, (SQUARE, HOLE)))
    assert mask[0, 0] and not mask[10, 10]


def test_bounds_and_boxes():
    assert bounds(SQUARE) == (0, 0, 100, 60)
    assert area_bounds([SQUARE, HOLE]) == (0, 0, 100, 60)
    assert area_bounds([((0, 0), (5, 0), (9, 0))]) is None  # a line has no area
    assert box_meets_image((90, 50, 120, 70), 100, 60)
    assert not box_meets_image((100, 0, 120, 10), 100, 60)  # touching is not meeting
    assert box_gap((130, 70, 150, 90), (0, 0, 100, 60)) == (30, 10)
    assert box_gap((-20, 10, -5, 20), (0, 0, 100, 60)) == (5, 0)


def test_merge_overlapping_boxes_until_none_overlaps():
    chain = [(0, 0, 10, 10), (30, 0, 40, 10), (5, 5, 35, 8)]  # merged through the third
    assert merge_overlapping(chain) == [(0, 0, 40, 10)]
    apart = [(0, 0, 10, 10), (10, 0, 20, 10)]  # sharing an edge only
    assert merge_overlapping(apart) == apart
