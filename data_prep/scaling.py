"""Resampling of a conversion to the models' resolution, and the size of its nuclei.

The models are built for nuclei of about 12-40 px (the slim FPN models of
``configs/_base_/models/*r18-slim*``: anchors of 16-256 px, 4 x the strides 4-64;
FCOS's regress ranges start at 16 px), tiles of 256 px. Images whose nuclei are much
larger or smaller (a fluorescence set at 100-130 px) are resampled while converting
(:func:`add_scale_arguments`):

* ``--scale F``: every image by ``F`` (0.25: a quarter of the width and height);
* ``--target-mpp T``: each image by ``mpp / T``, its micrometres per pixel ``mpp``
  taken from ``--mpp M`` or, where the source records it (slides, TIFFs read by
  QuPath's conversion), from the image; an image without one is an error;
* ``--nucleus-size PX``: every image by the factor that brings the median nucleus size
  (:func:`box_sides`) of the whole set to ``PX``.

``--mpp M`` alone records the pixel size without resampling. :func:`rescale` resamples
one :class:`~data_prep.writer.SourceImage`: the pixels by area averaging when shrinking
and bilinearly when enlarging (:class:`ResampledReader`), points and boxes by the same
factor (label images are never resampled: boxes and points are measured at the source's
resolution, then scaled). The image's ``scale`` (the factor) and its ``mpp`` (the
source's divided by the factor) go on every image entry the writer writes, and the
dataset's checkpoints carry them to whole-slide inference (docs/slides.md).

:func:`size_report` gives the nuclei's sizes after resampling (median, 5th and 95th
percentiles of their box sides) and a warning, with the ``--scale`` that brings the
median to :data:`SUGGESTED_SIDE`, when the median lies outside :data:`COMFORTABLE_SIDES`.
"""
import argparse
import dataclasses
import math

import cv2
import numpy as np

from cellio.images import MAX_WHOLE_PIXELS, check_region
from cellio.tiling import point_boxes

#: Median nucleus box side (pixels) the models handle well: from half the smallest
#: anchor (16 px) to a quarter of the largest (256 px), as the slim FPN models' anchors
#: (configs/_base_/models/*r18-slim*) cover 12-40 px cells best.
COMFORTABLE_SIDES = (8.0, 64.0)
#: Median nucleus box side that the suggested ``--scale`` reaches (the development
#: sets' nuclei are 20-50 px across).
SUGGESTED_SIDE = 24.0


def positive_float(text):
    """argparse type: a float > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected a number, got {text!r}') from None
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f'expected a positive number, got {text!r}')
    return value


def add_scale_arguments(parser, mpp_from_images):
    """The resampling options: ``--scale``, ``--target-mpp`` and ``--nucleus-size`` (one
    of them) and ``--mpp``.

    Args:
        mpp_from_images: the converter reads the images' own micrometres per pixel, so
            ``--target-mpp`` works without ``--mpp``.
    """
    group = parser.add_mutually_exclusive_group()
    group.add_argument('--scale', type=positive_float, default=None, metavar='F',
                       help='resample every image by F (0.25: a quarter of the width and '
                            'height), e.g. to bring 100 px nuclei to the 25 px the models '
                            'expect')
    own = ' (default: the images\' own, where they record it)' if mpp_from_images else ''
    group.add_argument('--target-mpp', type=positive_float, default=None, metavar='T',
                       help='resample each image to T micrometres per pixel, by its '
                            f'--mpp{own} divided by T')
    group.add_argument('--nucleus-size', type=positive_float, default=None, metavar='PX',
                       help='resample every image by the factor that brings the median '
                            'nucleus box side of the set to PX pixels (e.g. 24)')
    parser.add_argument('--mpp', type=positive_float, default=None, metavar='M',
                        help='micrometres per pixel of the images' +
                             (' (overrides their own)' if mpp_from_images else '') +
                             '; recorded on every image entry (divided by the scale)')


def image_scale(args, mpp, source, nucleus_scale=None):
    """The factor by which to resample one image: ``--scale``, its ``mpp`` divided by
    ``--target-mpp``, ``nucleus_scale`` for ``--nucleus-size``, else 1.

    Raises:
        ValueError: ``--target-mpp`` for an image of unknown ``mpp``.
    """
    if args.scale is not None:
        return args.scale
    if args.target_mpp is not None:
        if mpp is None:
            raise ValueError(f'{source}: --target-mpp {args.target_mpp:g} needs the '
                             'image\'s micrometres per pixel, which it does not record; '
                             'give --mpp M (the images\' micrometres per pixel) or '
                             '--scale F')
        return mpp / args.target_mpp
    if args.nucleus_size is not None:
        return nucleus_scale
    return 1.0


def nucleus_scale(sides, nucleus_size):
    """The factor that brings the median of ``sides`` (nucleus box sides in source
    pixels) to ``nucleus_size``.

    Raises:
        ValueError: no nucleus to measure.
    """
    sides = np.asarray(sides, dtype=np.float64)
    if not sides.size:
        raise ValueError(f'--nucleus-size {nucleus_size:g}: no nucleus to measure; give '
                         '--scale F or --target-mpp T instead')
    return nucleus_size / float(np.median(sides))


def box_sides(boxes_xywh):
    """The size of each box ``[x, y, w, h]``: the mean of its width and height."""
    boxes = np.asarray(boxes_xywh, dtype=np.float64).reshape(-1, 4)
    return (boxes[:, 2] + boxes[:, 3]) / 2


def scaled_size(width, height, scale):
    """``(width, height)`` of an image resampled by ``scale`` (at least 1 pixel)."""
    return max(1, round(width * scale)), max(1, round(height * scale))


class ResampledReader:
    """The regions of ``reader``'s ``width x height`` image resampled by ``scale``.

    The whole image is read and resampled on the first read (area averaging when
    shrinking, bilinear when enlarging) and kept until ``close()``, so that every tile
    of it is cut from one resampled image.
    """

    def __init__(self, reader, width, height, scale, name):
        self.reader, self.source_size, self.name = reader, (width, height), name
        self.width, self.height = scaled_size(width, height, scale)
        self.interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
        self._array = None

    def read_region(self, x0, y0, w, h):
        check_region(self.name, x0, y0, w, h, self.width, self.height)
        if self._array is None:
            pixels = np.ascontiguousarray(self.reader.read_region(0, 0, *self.source_size))
            self._array = cv2.resize(pixels, (self.width, self.height),
                                     interpolation=self.interpolation)
        return self._array[y0:y0 + h, x0:x0 + w]

    def close(self):
        self._array = None
        self.reader.close()


def rescale(image, scale, box_size=None):
    """``image`` (a :class:`~data_prep.writer.SourceImage`) resampled by ``scale``: its
    reader, size, points and boxes (point annotations get their ``box_size`` boxes, in
    source pixels, first), ``mpp`` divided and ``scale`` multiplied by it. A scale of 1
    returns ``image`` itself.

    Raises:
        ValueError: the resampled image exceeds
            :data:`~cellio.images.MAX_WHOLE_PIXELS` pixels.
    """
    if scale == 1:
        return image
    width, height = scaled_size(image.width, image.height, scale)
    if width * height > MAX_WHOLE_PIXELS:
        raise ValueError(f'{image.source}: resampled by {scale:g}, its {image.width}x'
                         f'{image.height} image would be {width}x{height} pixels, more '
                         f'than {MAX_WHOLE_PIXELS}; choose a smaller scale or smaller '
                         'images (regions)')
    factors = np.array([width / image.width, height / image.height])
    boxes = image.boxes
    if boxes is None:
        boxes = point_boxes(image.points, box_size, image.width, image.height)
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4) * np.tile(factors, 2)
    points = None if image.points is None else np.asarray(image.points) * factors
    reader = ResampledReader(image.reader, image.width, image.height, scale,
                             f'{image.source} resampled by {scale:g}')
    return dataclasses.replace(
        image, reader=reader, width=width, height=height, points=points, boxes=boxes,
        mpp=None if image.mpp is None else image.mpp / scale, scale=image.scale * scale)


def size_report(sides, scales):
    """The nuclei's sizes after resampling and what they mean for the models.

    Args:
        sides: box side of every nucleus written (:func:`box_sides`), in the pixels
            of the written images.
        scales: the factor of each image.

    Returns:
        dict ``nuclei``, ``median``, ``p5``, ``p95`` (pixels; ``None`` without nuclei),
        ``scale`` (the one factor of every image, ``None`` when they differ) and
        ``warning`` (``None`` when the median is within :data:`COMFORTABLE_SIDES`).
    """
    sides = np.asarray(sides, dtype=np.float64)
    applied = sorted(set(scales))
    report = dict(nuclei=int(sides.size), median=None, p5=None, p95=None,
                  scale=applied[0] if len(applied) == 1 else None, warning=None)
    if not sides.size:
        return report
    p5, median, p95 = (round(float(v), 2) for v in np.percentile(sides, (5, 50, 95)))
    report.update(median=median, p5=p5, p95=p95)
    low, high = COMFORTABLE_SIDES
    if not low <= median <= high:
        report['warning'] = _size_warning(median, report['scale'])
    return report


def _size_warning(median, applied):
    """The warning for a median box side outside :data:`COMFORTABLE_SIDES`, with the
    ``--scale`` that brings it to :data:`SUGGESTED_SIDE`."""
    low, high = COMFORTABLE_SIDES
    factor = SUGGESTED_SIDE / median
    if applied is not None:
        fix = f'convert with --scale {applied * factor:.3g}'
    else:
        fix = f'resample by a further {factor:.3g} (e.g. --target-mpp divided by it)'
    return (f'the nuclei\'s median box side is {median:g} px, outside the {low:g}-{high:g}'
            f' px the models\' anchors suit (16-256 px anchors for 12-40 px nuclei); '
            f'{fix} to bring it to about {SUGGESTED_SIDE:g} px')


def size_line(report):
    """The printed line of a :func:`size_report`."""
    if not report['nuclei']:
        return 'nucleus size: no nucleus written'
    scale = 'per image' if report['scale'] is None else f'{report["scale"]:g}'
    return (f'nucleus size (box side, px after resampling by {scale}): median '
            f'{report["median"]:g}, 5th-95th percentile {report["p5"]:g}-'
            f'{report["p95"]:g}, {report["nuclei"]} nuclei')
