"""Opening raw images for :mod:`data_prep.writer`: region reads of large TIFFs.

Readers follow the contract of :mod:`data_prep.readers`: ``read_region(x0, y0, w, h)``
returns the pixels ``[y0, y0 + h) x [x0, x0 + w)`` as an RGB ``uint8`` array of shape
``(h, w, 3)``, and ``close()`` releases the file.

* :class:`TiffRegionReader` (:mod:`mmdet_pu.io.tiff`, shared with the whole-slide
  reader) decodes only the strips or tiles of the first page that intersect the
  requested region, so a tile of a 20000 x 20000 slide costs memory of the order of the
  tile, never of the slide. Grey and palette pages are expanded to RGB, extra samples
  (alpha) dropped; only 8-bit samples are accepted.
* :func:`open_image` picks the reader for a path: :class:`TiffRegionReader` for TIFFs,
  :class:`data_prep.readers.ImageFileReader` (whole image, alpha dropped, e.g. the RGBA
  BMPs of CRCHistoPhenotypes) for everything else and for small TIFFs whose compression
  tifffile cannot decode here (LZW / JPEG without ``imagecodecs``).
* :class:`LazyImageReader` defers :func:`open_image` to the first read, so a converter
  can describe thousands of images up front without holding their files open.
* :func:`image_size` reads only the header.

``TiffRegionReader`` and ``UnsupportedCompression`` are imported from
:mod:`mmdet_pu.io.tiff` on first use (also as attributes of this module): importing
``mmdet_pu`` registers its models, i.e. imports torch and mmdet (seconds), which
``prepare.py <dataset> -h`` and converters of PNG images do not need.
"""
from pathlib import Path

import tifffile
from PIL import Image

from data_prep.readers import ImageFileReader

TIFF_SUFFIXES = ('.tif', '.tiff')

#: Largest image (pixels) that may be decoded whole when a TIFF's compression cannot be
#: decoded segment by segment (about 200 MB of RGB).
MAX_WHOLE_PIXELS = 64_000_000

#: Names of :mod:`mmdet_pu.io.tiff` that this module exports (see the module doc).
_TIFF_NAMES = ('TiffRegionReader', 'UnsupportedCompression')


def __getattr__(name):
    if name in _TIFF_NAMES:
        from mmdet_pu.io import tiff
        return getattr(tiff, name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def open_image(path, max_whole_pixels=MAX_WHOLE_PIXELS):
    """Open a reader for ``path``: region reads for TIFF, whole-image reads otherwise.

    A TIFF whose compression tifffile cannot decode here (LZW or JPEG without
    ``imagecodecs``) is decoded whole with OpenCV if it has at most
    ``max_whole_pixels`` pixels; a larger one is an error that says what to install.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f'{path}: image file not found')
    if path.suffix.lower() not in TIFF_SUFFIXES:
        return ImageFileReader(path)
    from mmdet_pu.io.tiff import TiffRegionReader, UnsupportedCompression, tiff_size
    try:
        return TiffRegionReader(path)
    except UnsupportedCompression:
        width, height = tiff_size(path)
        if width * height > max_whole_pixels:
            raise
        return ImageFileReader(path)


class LazyImageReader:
    """A reader that opens ``path`` with :func:`open_image` on the first read.

    ``close()`` releases the underlying reader (it is reopened if read again).
    """

    def __init__(self, path):
        self.path = Path(path)
        self._reader = None

    def read_region(self, x0, y0, w, h):
        """RGB ``uint8`` pixels of the region ``[x0, x0+w) x [y0, y0+h)``."""
        if self._reader is None:
            self._reader = open_image(self.path)
        return self._reader.read_region(x0, y0, w, h)

    def close(self):
        if self._reader is not None:
            self._reader.close()
            self._reader = None


def image_size(path):
    """``(width, height)`` of an image, read from its header only."""
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
