"""The raw image under an annotation file: its level-0 pixels, size, QuPath's frame and
resolution (:func:`open_image_source`).

Ordinary images (:data:`PLAIN_SUFFIXES`) are read by
:class:`~cellio.images.LazyImageReader`; TIFFs and whole slides at level 0 by
:func:`~cellio.slides.open_level_regions`, the reader of whole-slide inference,
which also gives their resolution and QuPath's frame
(:meth:`~cellio.slides.SlideReader.qupath_frame`). Either reader opens its file on
the first read.
"""
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

from .images import LazyImageReader, image_size
from .slides import OPENSLIDE_SUFFIXES, open_level_regions, open_slide
from .tiff import TIFF_SUFFIXES

#: Ordinary images, decoded whole by OpenCV.
PLAIN_SUFFIXES = ('.png', '.jpg', '.jpeg', '.bmp')
#: Every image :func:`open_image_source` opens.
IMAGE_SUFFIXES = PLAIN_SUFFIXES + TIFF_SUFFIXES + OPENSLIDE_SUFFIXES


@dataclass
class ImageSource:
    """A raw image: its lazy level-0 reader, size, QuPath frame and resolution.

    Attributes:
        path: the file.
        reader: ``read_region(x0, y0, w, h)`` of level 0, opened on the first read.
        size: ``(width, height)`` of level 0.
        frame: ``(x, y, width, height)``: QuPath's image in level-0 pixels.
        mpp: micrometres per pixel, ``None`` if unknown.
    """
    path: Path
    reader: object
    size: Tuple[int, int]
    frame: Tuple[int, int, int, int]
    mpp: Optional[float] = None


def open_image_source(path, use_bounds=True) -> ImageSource:
    """The :class:`ImageSource` of an image or slide (its header only is read now).

    Args:
        path: an image with a suffix in :data:`IMAGE_SUFFIXES`.
        use_bounds: QuPath's frame of a slide with ``openslide.bounds-*`` is the bounds
            (QuPath's OpenSlide server), else level 0 (Bio-Formats, ``--no-crop``).
    """
    path = Path(path)
    if path.suffix.lower() in PLAIN_SUFFIXES:
        size = image_size(path)
        return ImageSource(path, LazyImageReader(path), size, (0, 0, *size))
    with open_slide(path) as slide:
        return ImageSource(path, LazyImageReader(path, open_level_regions), slide.dimensions,
                           slide.qupath_frame(use_bounds), slide.mpp)
