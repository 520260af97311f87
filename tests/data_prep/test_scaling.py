"""Resampling while converting (``--scale``, ``--target-mpp``, ``--nucleus-size``) and the
nuclei's size report (data_prep/scaling.py)."""
import argparse

import numpy as np
import pytest

from data_prep.scaling import (ResampledReader, add_scale_arguments, box_sides,
                               image_scale, nucleus_scale, rescale, size_line, size_report)
from data_prep.writer import SourceImage
from cellio.images import ArrayReader


def parse(*argv, mpp_from_images=True):
    parser = argparse.ArgumentParser()
    add_scale_arguments(parser, mpp_from_images)
    return parser.parse_args(list(argv))


def test_the_factor_of_each_option():
    assert image_scale(parse('--scale', '0.25'), None, 'a.png') == 0.25
    assert image_scale(parse('--target-mpp', '0.5'), 0.125, 'a.png') == 0.25
    assert image_scale(parse('--nucleus-size', '24'), None, 'a.png', 0.2) == 0.2
    assert image_scale(parse('--mpp', '0.3'), 0.3, 'a.png') == 1.0  # only recorded
    with pytest.raises(ValueError, match=r"^a\.png: --target-mpp 0\.5 needs the image's "
                                         r'micrometres per pixel.*give --mpp M'):
        image_scale(parse('--target-mpp', '0.5'), None, 'a.png')


def test_scale_options_exclude_each_other_and_refuse_non_positive_values(capsys):
    for argv in (['--scale', '0.5', '--target-mpp', '0.5'], ['--scale', '0'],
                 ['--nucleus-size', '-3'], ['--mpp', 'x']):
        with pytest.raises(SystemExit):
            parse(*argv)
    assert 'expected a positive number' in capsys.readouterr().err


def test_nucleus_scale_brings_the_median_to_the_size():
    assert nucleus_scale([100, 120, 130, 90, 110], 24) == pytest.approx(24 / 110)
    with pytest.raises(ValueError, match='--nucleus-size 24: no nucleus to measure'):
        nucleus_scale([], 24)
    assert box_sides([[0, 0, 10, 20], [5, 5, 4, 4]]).tolist() == [15, 4]


def test_resampled_reader_averages_areas_and_interpolates():
    pixels = np.zeros((8, 12, 3), np.uint8)
    pixels[:4, :4] = 200  # one 4x4 block: one pixel at a quarter
    pixels[4:, 4:6] = 100  # half a block
    reader = ResampledReader(ArrayReader(pixels), 12, 8, 0.25, 'x')
    assert (reader.width, reader.height) == (3, 2)
    assert reader.read_region(0, 0, 3, 2)[..., 0].tolist() == [[200, 0, 0], [0, 50, 0]]
    assert reader.read_region(1, 1, 1, 1)[0, 0, 0] == 50
    with pytest.raises(ValueError, match=r'region \(x0=2, y0=0, w=2, h=1\) is not inside'):
        reader.read_region(2, 0, 2, 1)
    larger = ResampledReader(ArrayReader(pixels), 12, 8, 2, 'y').read_region(0, 0, 24, 16)
    assert larger.shape == (16, 24, 3) and larger[0, 0, 0] == 200 and larger[15, 9, 0] == 100


def test_rescale_moves_points_and_boxes_and_records_the_factor():
    pixels = np.full((100, 120, 3), 50, np.uint8)
    image = SourceImage(source='a.png', group='a', reader=ArrayReader(pixels), width=120,
                        height=100, labels=[1, 1], points=[[10, 20], [119, 99]],
                        boxes=[[0, 10, 20, 20], [110, 90, 10, 10]], mpp=0.125)
    half = rescale(image, 0.5)
    assert (half.width, half.height, half.scale, half.mpp) == (60, 50, 0.5, 0.25)
    np.testing.assert_allclose(half.points, [[5, 10], [59.5, 49.5]])
    np.testing.assert_allclose(half.boxes, [[0, 5, 10, 10], [55, 45, 5, 5]])
    assert half.reader.read_region(0, 0, 60, 50).shape == (50, 60, 3)
    assert rescale(image, 1) is image
    points = SourceImage(source='b.png', group='b', reader=ArrayReader(pixels), width=120,
                         height=100, labels=[1], points=[[60, 50]])
    quarter = rescale(points, 0.25, box_size=32)  # --box-size in source pixels
    np.testing.assert_allclose(quarter.boxes, [[11, 8.5, 8, 8]])
    with pytest.raises(ValueError, match=r'^a\.png: resampled by 1000, .* would be '
                                         r'120000x100000 pixels'):
        rescale(image, 1000)


def test_size_report_warns_outside_the_comfortable_range():
    report = size_report(np.linspace(100, 130, 31), [1.0, 1.0])
    assert (report['nuclei'], report['median'], report['p5'], report['p95']) == \
        (31, 115.0, 101.5, 128.5)
    assert report['scale'] == 1.0
    assert 'median box side is 115 px, outside the 8-64 px' in report['warning']
    assert 'convert with --scale 0.209 to bring it to about 24 px' in report['warning']
    small = size_report([4, 5, 6], [0.1])
    assert 'convert with --scale 0.48 ' in small['warning']  # 0.1 * 24 / 5
    assert size_report([20, 24, 30], [0.25, 0.5])['warning'] is None
    mixed = size_report([100], [0.25, 0.5])
    assert mixed['scale'] is None and 'resample by a further 0.24' in mixed['warning']
    assert size_line(report) == ('nucleus size (box side, px after resampling by 1): '
                                 'median 115, 5th-95th percentile 101.5-128.5, 31 nuclei')
    assert size_line(size_report([], [1.0])) == 'nucleus size: no nucleus written'
