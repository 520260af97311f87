"""Region readers of ordinary images and large TIFFs.

A reader is any object with

    read_region(x0, y0, w, h) -> np.ndarray   # (h, w, 3) uint8 RGB

and ``close()``. The dataset converters (``data_prep/writer.py``) read pixels only
through it, so a tile of a huge image costs memory of the order of the tile:

* :class:`ArrayReader` -- an RGB array held in memory (generated images);
* :class:`ImageFileReader` -- an ordinary image file (PNG, BMP, JPEG, small TIFF)
  decoded whole on the first read; grey is expanded to RGB, alpha dropped (the RGBA BMPs
  of CRCHistoPhenotypes);
* :class:`~cellio.tiff.TiffRegionReader` -- only the strips or tiles of a TIFF that
  a region intersects (:func:`open_image` picks it for TIFFs);
* :class:`LazyImageReader` -- defers :func:`open_image` to the first read, so a
  converter can describe thousands of images without holding their files open;
* :class:`CropReader` and :class:`MaskedReader` -- the regions of another reader, inside a
  crop or with areas painted over.

:func:`image_size` reads only the header. Whole slides (pyramids, OpenSlide formats) are
read by :mod:`cellio.slides`.
"""
from pathlib import Path

import numpy as np
import tifffile

from .tiff import TIFF_SUFFIXES, TiffRegionReader, UnsupportedCompression, tiff_size

#: Largest image (pixels) that may be decoded whole when it cannot be read region by
#: region (about 200 MB of RGB).
MAX_WHOLE_PIXELS = 64_000_000


def check_region(name, x0, y0, w, h, width, height) -> None:
    """ValueError unless ``[x0, x0 + w) x [y0, y0 + h)`` lies inside the image."""
    if w <= 0 or h <= 0 or x0 < 0 or y0 < 0 or x0 + w > width or y0 + h > height:
        raise ValueError(f'{name}: region (x0={x0}, y0={y0}, w={w}, h={h}) is not inside '
                         f'the {width}x{height} image')


class ArrayReader:
    """Regions of an RGB ``uint8`` array held in memory.

    Args:
        array: (H, W, 3) uint8 RGB image.
        name: used in error messages.
    """

    def __init__(self, array, name='<array>'):
        array = np.asarray(array)
        if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
            raise ValueError(f'{name}: expected an RGB uint8 array (H, W, 3), got '
                             f'{array.dtype} {array.shape}')
        self.array = array
        self.name = name
        self.height, self.width = array.shape[:2]

    def read_region(self, x0, y0, w, h):
        check_region(self.name, x0, y0, w, h, self.width, self.height)
        return self.array[y0:y0 + h, x0:x0 + w]

    def close(self):
        """Nothing to release."""


class ImageFileReader:
    """Regions of an ordinary image file, decoded on the first read and kept until
    ``close()``. Grey images are expanded to RGB and an alpha channel is dropped."""

    def __init__(self, path):
        self.path = Path(path)
        self._array = None

    def _load(self):
        import cv2

        data = cv2.imread(str(self.path), cv2.IMREAD_COLOR)  # BGR; grey/alpha -> 3 ch.
        if data is None:
            raise ValueError(f'{self.path}: cannot be read as an image')
        return np.ascontiguousarray(data[..., ::-1])

    @property
    def size(self):
        """``(width, height)`` of the image (decodes it if necessary)."""
        if self._array is None:
            self._array = self._load()
        return self._array.shape[1], self._array.shape[0]

    def read_region(self, x0, y0, w, h):
        width, height = self.size
        check_region(str(self.path), x0, y0, w, h, width, height)
        return self._array[y0:y0 + h, x0:x0 + w]

    def close(self):
        self._array = None


def open_tiff(path, open_whole, max_whole_pixels=MAX_WHOLE_PIXELS,
              region_reader=TiffRegionReader):
    """``region_reader(path)`` (segment-by-segment reads), or ``open_whole(path)`` for a
    TIFF whose compression tifffile cannot decode here (LZW / JPEG without
    ``imagecodecs``) when it has at most ``max_whole_pixels`` pixels; a larger one
    re-raises :class:`UnsupportedCompression`, which says what to install."""
    try:
        return region_reader(path)
    except UnsupportedCompression:
        width, height = tiff_size(path)
        if width * height > max_whole_pixels:
            raise
        return open_whole(path)


def open_image(path, max_whole_pixels=MAX_WHOLE_PIXELS):
    """A reader for ``path``: region reads for TIFFs (:func:`open_tiff`), whole-image
    reads (:class:`ImageFileReader`) for everything else."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f'{path}: image file not found')
    if path.suffix.lower() not in TIFF_SUFFIXES:
        return ImageFileReader(path)
    return open_tiff(path, ImageFileReader, max_whole_pixels)


class LazyImageReader:
    """A reader that opens ``path`` on the first read, with ``open_reader`` (default
    :func:`open_image`; :func:`cellio.slides.open_level_regions` for level 0 of a
    slide).

    ``close()`` releases the underlying reader (it is reopened if read again).
    """

    def __init__(self, path, open_reader=None):
        self.path = Path(path)
        self.open_reader = open_reader or open_image
        self._reader = None

    def read_region(self, x0, y0, w, h):
        """RGB ``uint8`` pixels of the region ``[x0, x0+w) x [y0, y0+h)``."""
        if self._reader is None:
            self._reader = self.open_reader(self.path)
        return self._reader.read_region(x0, y0, w, h)

    def close(self):
        if self._reader is not None:
            self._reader.close()
            self._reader = None


class CropReader:
    """The regions of ``reader`` inside the crop whose top-left corner is ``(x, y)``."""

    def __init__(self, reader, x, y):
        self.reader, self.x, self.y = reader, x, y

    def read_region(self, x0, y0, w, h):
        return self.reader.read_region(self.x + x0, self.y + y0, w, h)

    def close(self):
        self.reader.close()


class MaskedReader:
    """The regions of ``reader`` with the pixels inside ``areas`` painted ``fill``.

    Args:
        reader: any reader.
        areas: polygons in ``reader``'s pixels, each with ``bounds`` (``(x0, y0, x1,
            y1)``) and ``pixel_mask(x, y, w, h)`` (the pixels of a window whose centre
            lies inside), e.g. :class:`~cellio.qupath.Region`.
        fill: the value of the painted pixels (0..255).
    """

    def __init__(self, reader, areas, fill):
        self.reader, self.areas, self.fill = reader, list(areas), fill

    def read_region(self, x0, y0, w, h):
        pixels = self.reader.read_region(x0, y0, w, h)
        mask = np.zeros((h, w), dtype=bool)
        for area in self.areas:
            ax0, ay0, ax1, ay1 = area.bounds
            if ax1 > x0 and ay1 > y0 and ax0 < x0 + w and ay0 < y0 + h:
                mask |= area.pixel_mask(x0, y0, w, h)
        if not mask.any():
            return pixels
        pixels = np.array(pixels, copy=True)
        pixels[mask] = self.fill
        return pixels

    def close(self):
        self.reader.close()


def image_size(path):
    """``(width, height)`` of an image, read from its header only."""
    from PIL import Image

    path = Path(path)
    try:
        if path.suffix.lower() in TIFF_SUFFIXES:
            with tifffile.TiffFile(path) as tif:
                _, _, height, width, _ = tif.pages.first.shaped
                return width, height
        with Image.open(path) as im:
            return im.size
    except (tifffile.TiffFileError, OSError, IndexError, SyntaxError) as err:
        raise ValueError(f'{path}: cannot read the image size ({err})') from err
