"""Where a slide is read: the region of interest and the resolution the model sees.

The model sees pixels of its training resolution, ``target_mpp`` micrometres per pixel.
:func:`plan_resolution` picks the pyramid level closest to it and the factor each tile is
resampled by (``level mpp / target_mpp``, unless they agree within
:data:`MPP_TOLERANCE`). Where the micrometres per pixel of the model or of the slide are
unknown, the model's training images may still record the factor they were resampled
by from their sources (``scale``: ``prepare.py masks|qupath --scale``, the checkpoint's
``dataset_meta['scale']``); a slide of the same kind is then resampled by it. Without
either, a slide is read at level 0 as it is, with a :class:`ResolutionWarning`. Regions
of interest are level-0 pixels of QuPath's frame
(:meth:`~cellio.slides.SlideReader.qupath_frame`), whatever the level read.
"""
import math
import warnings
from dataclasses import dataclass
from typing import Optional, Tuple

from cellio.slides import SlideReader

#: Relative difference between a level's and the target's micrometres per pixel below
#: which the level is read as it is, without resampling (a 0.2527 µm/px scan for a model
#: trained at 0.25).
MPP_TOLERANCE = 0.05


class ResolutionWarning(UserWarning):
    """A slide without a resolution is read as it is, whatever the model's."""


@dataclass(frozen=True)
class ResolutionPlan:
    """How a slide is read: pyramid ``level``, resampled by ``resample`` (model pixels per
    pixel of the level) so that the model sees ``target_mpp`` micrometres per pixel
    (``None``: the level as it is, or resampled by the training images' ``scale``);
    ``mpp`` is the slide's, per level-0 pixel."""
    level: int
    resample: float = 1.0
    mpp: Optional[float] = None
    target_mpp: Optional[float] = None

    def tiling(self, tile_size, overlap):
        """``(tile, overlap)`` in pixels of the level for ``tile_size`` and ``overlap``
        pixels of the model's input."""
        tile = max(1, round(tile_size / self.resample))
        return tile, min(tile - 1, round(overlap / self.resample))


def plan_resolution(reader: SlideReader, target_mpp=None, level=None,
                    tolerance=MPP_TOLERANCE, scale=None) -> ResolutionPlan:
    """Which level of ``reader`` to read, and how much to resample it, for a model
    trained at ``target_mpp`` micrometres per pixel, or on images resampled by
    ``scale`` from images like the slide.

    * ``target_mpp`` and the slide's resolution known: ``level``, by default the level
      closest to ``target_mpp``
      (:meth:`~cellio.slides.SlideReader.level_for_mpp`), resampled by ``level mpp
      / target_mpp``, unless the two differ by at most ``tolerance`` (relative): then
      as it is.
    * else, with ``scale``: ``level``, by default the level whose downsample is closest
      to ``1 / scale``, resampled by ``scale`` times its downsample (within
      ``tolerance`` of 1: as it is); with ``target_mpp`` (a slide without a
      resolution) a :class:`ResolutionWarning` says so.
    * else ``level`` (default 0) as it is; with ``target_mpp`` a
      :class:`ResolutionWarning` says that the slide does not state its resolution.

    Raises:
        ValueError: ``level`` does not exist, or ``target_mpp`` or ``scale`` is not
            positive.
    """
    if level is not None and not 0 <= level < reader.level_count:
        raise ValueError(f'{reader.path}: level {level} does not exist (levels 0-'
                         f'{reader.level_count - 1} with the {reader.backend} reader)')
    if scale is not None and not float(scale) > 0:
        raise ValueError(f'the training images\' scale must be > 0, got {scale!r}')
    if target_mpp is not None:
        target_mpp = float(target_mpp)
        if not target_mpp > 0:
            raise ValueError(f'target resolution must be > 0 micrometres per pixel, got '
                             f'{target_mpp}')
        if reader.mpp is None:
            done = f'reading level {level or 0} as it is' if scale is None else (
                f'resampling it by the factor {float(scale):g} of the training images '
                '(taking it for a slide of their kind)')
            warnings.warn(f'{reader.path}: the slide does not state its resolution; '
                          f'{done}, not to the model\'s {target_mpp:g} micrometres per '
                          'pixel', ResolutionWarning, stacklevel=2)
    if target_mpp is None or reader.mpp is None:
        if scale is None:
            return ResolutionPlan(level or 0, mpp=reader.mpp)
        return _scale_plan(reader, float(scale), level, tolerance)
    if level is None:
        level = reader.level_for_mpp(target_mpp)
    resample = reader.level_mpp(level) / target_mpp
    if abs(resample - 1) <= tolerance:
        resample = 1.0
    return ResolutionPlan(level, resample, reader.mpp, target_mpp)


def _scale_plan(reader: SlideReader, scale, level, tolerance) -> ResolutionPlan:
    """``level`` (default: the one whose downsample is closest to ``1 / scale``, the
    finer of two) resampled by ``scale`` times its downsample, unless that is within
    ``tolerance`` of 1."""
    if level is None:
        level = min(range(reader.level_count), key=lambda k: (
            abs(math.log(reader.level_downsamples[k] * scale)), k))
    resample = scale * reader.level_downsamples[level]
    if abs(resample - 1) <= tolerance:
        resample = 1.0
    return ResolutionPlan(level, resample, reader.mpp)


def check_roi(roi, dimensions, path) -> Tuple[int, int, int, int]:
    """``roi`` as ints ``(x, y, w, h)`` inside the slide's ``dimensions`` (QuPath's
    image size, level-0 pixels); ``None``: all."""
    width, height = dimensions
    if roi is None:
        return 0, 0, width, height
    x, y, w, h = (int(v) for v in roi)
    if w <= 0 or h <= 0 or x < 0 or y < 0 or x + w > width or y + h > height:
        raise ValueError(f'{path}: ROI x={x} y={y} w={w} h={h} is not inside the '
                         f'{width}x{height} slide (level-0 pixels, QuPath\'s frame)')
    return x, y, w, h


def level0_roi(reader: SlideReader, roi, use_bounds=True):
    """``roi`` (QuPath's frame, ``None``: QuPath's whole image), checked, and the
    same region in level-0 pixels, with QuPath's origin: ``(roi, level0, (ox, oy))``.

    ``use_bounds``: QuPath's frame is the OpenSlide bounds
    (:meth:`~cellio.slides.SlideReader.qupath_frame`).
    """
    ox, oy, width, height = reader.qupath_frame(use_bounds)
    x, y, w, h = check_roi(roi, (width, height), reader.path)
    return (x, y, w, h), (x + ox, y + oy, w, h), (ox, oy)


def level_region(reader: SlideReader, roi, level):
    """The level-0 ``roi`` in pixels of ``level``: ``(x, y, w, h)``."""
    scale = reader.level_downsamples[level]
    width, height = reader.level_dimensions[level]
    x, y, w, h = roi
    x0, y0 = int(x // scale), int(y // scale)
    x1, y1 = min(width, math.ceil((x + w) / scale)), min(height, math.ceil((y + h) / scale))
    return x0, y0, x1 - x0, y1 - y0
