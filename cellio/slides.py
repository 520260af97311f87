"""Region reads of whole-slide images, whatever their format.

:func:`open_slide` returns a :class:`SlideReader`; every backend reads a region of one
pyramid level as an RGB ``uint8`` array and never decodes more of the file than the
region needs (except small PNG/JPEG images, which are decoded whole once):

* **OpenSlide** (``openslide-python`` with the library from ``openslide-bin``) for every
  format it recognises: Aperio ``.svs``, Hamamatsu ``.ndpi``, MIRAX ``.mrxs``, Leica
  ``.scn``, Ventana ``.bif``, Philips TIFF, and tiled (pyramidal) generic TIFFs. Levels are
  the slide's pyramid. Transparent pixels (outside the scanned area, MIRAX gaps) are
  composited onto white, i.e. background.
* **tifffile** for TIFFs OpenSlide cannot open (strip TIFFs, compressions its libtiff
  lacks): :class:`cellio.tiff.TiffRegionReader` decodes only the strips / tiles
  a region intersects. One level: the first page.
* **PIL** (OpenSlide's ``ImageSlide``) for PNG / JPEG images, and for TIFFs whose
  compression neither OpenSlide nor tifffile can decode here (LZW / JPEG strips without
  ``imagecodecs``), of at most :data:`~cellio.images.MAX_WHOLE_PIXELS` pixels.
  One level.

OpenSlide is imported when a slide is opened, never when the package is imported.
Coordinates are pixels of the level being read, ``x`` = column, ``y`` = row.

QuPath's frame (:meth:`SlideReader.qupath_frame`): QuPath's OpenSlide server crops a
slide to the rectangle of its ``openslide.bounds-x``, ``-y``, ``-width``, ``-height``
properties when all four are integers (MIRAX ``.mrxs`` and other formats with a scanned
area smaller than level 0), so QuPath's pixel ``(0, 0)`` is level-0 pixel ``(bounds-x,
bounds-y)`` and QuPath's image is ``bounds-width x bounds-height``. Every other slide,
and a slide QuPath opened with ``--no-crop`` or with Bio-Formats, is the whole level 0.
"""
import math
from pathlib import Path
from typing import Optional, Tuple

import numpy as np

from .images import MAX_WHOLE_PIXELS, open_tiff
from .tiff import TIFF_SUFFIXES, TiffRegionReader

#: Suffixes of ordinary images read whole with PIL.
IMAGE_SUFFIXES = ('.png', '.jpg', '.jpeg')
#: Formats only OpenSlide reads (pyramids of the scanner vendors).
OPENSLIDE_SUFFIXES = ('.svs', '.ndpi', '.mrxs', '.scn', '.bif', '.vms', '.vmu', '.svslide')
#: Suffixes :func:`find_slides` collects from a directory.
SLIDE_SUFFIXES = OPENSLIDE_SUFFIXES + TIFF_SUFFIXES + IMAGE_SUFFIXES


def _mean_mpp(mpp_x, mpp_y) -> Optional[float]:
    """The mean of two micrometre-per-pixel values given as text, None unless both are
    positive numbers."""
    try:
        values = [float(mpp_x), float(mpp_y)]
    except (TypeError, ValueError):
        return None
    if not all(v > 0 and v == v for v in values):
        return None
    return sum(values) / 2


def _bounds(properties) -> Optional[Tuple[int, int, int, int]]:
    """``openslide.bounds-x, -y, -width, -height`` as ints, None unless all four are
    integers (QuPath's rule) and the size is positive."""
    try:
        x, y, w, h = (int(properties[f'openslide.bounds-{key}'])
                      for key in ('x', 'y', 'width', 'height'))
    except (KeyError, TypeError, ValueError):
        return None
    return (x, y, w, h) if w > 0 and h > 0 else None


class SlideReader:
    """Region reads of one slide.

    Attributes:
        path (Path): the slide file.
        backend (str): ``'openslide'``, ``'tifffile'`` or ``'pil'``.
        level_dimensions (tuple): ``(width, height)`` of every level, level 0 first.
        level_downsamples (tuple): level-0 pixels per pixel of every level.
        mpp (float or None): micrometres per level-0 pixel (the mean of x and y), None
            when the file does not say.
        bounds (tuple or None): OpenSlide's ``openslide.bounds-*`` as level-0 ``(x, y,
            width, height)``, None unless all four are integers.
    """

    path: Path
    backend: str
    level_dimensions: Tuple[Tuple[int, int], ...]
    level_downsamples: Tuple[float, ...]
    mpp: Optional[float] = None
    bounds: Optional[Tuple[int, int, int, int]] = None

    @property
    def dimensions(self) -> Tuple[int, int]:
        """``(width, height)`` of level 0."""
        return self.level_dimensions[0]

    @property
    def level_count(self) -> int:
        return len(self.level_dimensions)

    def qupath_frame(self, use_bounds: bool = True) -> Tuple[int, int, int, int]:
        """``(x, y, width, height)``: the level-0 rectangle QuPath shows as the image.

        Its ``x, y`` is QuPath's origin in level-0 pixels (level-0 = QuPath + ``(x, y)``)
        and ``width x height`` the image size QuPath reports: :attr:`bounds` when the
        slide has them and ``use_bounds`` (QuPath's OpenSlide server; module doc), else
        ``(0, 0)`` and level 0's size.
        """
        if use_bounds and self.bounds is not None:
            return self.bounds
        return (0, 0, *self.dimensions)

    def level_mpp(self, level: int) -> Optional[float]:
        """Micrometres per pixel of ``level`` (None when the slide has no resolution)."""
        return None if self.mpp is None else self.mpp * self.level_downsamples[level]

    def level_for_mpp(self, target_mpp: float) -> int:
        """The level whose pixel size is closest to ``target_mpp`` micrometres, by their
        ratio (``|log(level_mpp / target_mpp)|``; the finer of two equally close levels),
        or level 0 when the slide has no resolution."""
        if self.mpp is None:
            return 0
        if not target_mpp > 0:
            raise ValueError(f'target resolution must be > 0 micrometres per pixel, got '
                             f'{target_mpp}')
        distances = [round(abs(math.log(self.level_mpp(level) / target_mpp)), 9)
                     for level in range(self.level_count)]
        return min(range(self.level_count), key=lambda level: (distances[level], level))

    def read_region(self, level: int, x: int, y: int, w: int, h: int) -> np.ndarray:
        """RGB ``uint8`` pixels ``[y, y + h) x [x, x + w)`` of ``level``, shape (h, w, 3)."""
        self._check_region(level, x, y, w, h)
        return self._read(level, int(x), int(y), int(w), int(h))

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _read(self, level, x, y, w, h):
        raise NotImplementedError

    def _check_region(self, level, x, y, w, h):
        if not 0 <= level < self.level_count:
            raise ValueError(f'{self.path}: level {level} does not exist (the slide has '
                             f'{self.level_count} level(s) with the {self.backend} reader)')
        width, height = self.level_dimensions[level]
        if w <= 0 or h <= 0 or x < 0 or y < 0 or x + w > width or y + h > height:
            raise ValueError(f'{self.path}: region x={x} y={y} w={w} h={h} is not inside '
                             f'level {level} ({width}x{height})')


class OpenSlideReader(SlideReader):
    """A slide opened by OpenSlide (``OpenSlide`` or PIL-backed ``ImageSlide``)."""

    def __init__(self, slide, path, backend='openslide'):
        self._slide = slide
        self.path = Path(path)
        self.backend = backend
        self.level_dimensions = tuple(tuple(map(int, d)) for d in slide.level_dimensions)
        self.level_downsamples = tuple(float(d) for d in slide.level_downsamples)
        properties = getattr(slide, 'properties', {})
        self.mpp = _mean_mpp(properties.get('openslide.mpp-x'),
                             properties.get('openslide.mpp-y'))
        self.bounds = _bounds(properties)

    def _read(self, level, x, y, w, h):
        # OpenSlide takes the top-left corner in level-0 pixels, the size in level pixels.
        scale = self.level_downsamples[level]
        rgba = np.asarray(self._slide.read_region(
            (int(round(x * scale)), int(round(y * scale))), level, (w, h)))
        alpha = rgba[..., 3:]
        if alpha.min() == 255:
            return np.ascontiguousarray(rgba[..., :3])
        # un-premultiplied RGBA: composite onto white (transparent = background)
        rgb = rgba[..., :3].astype(np.uint16) * alpha + 255 * (255 - alpha.astype(np.uint16))
        return ((rgb + 127) // 255).astype(np.uint8)

    def close(self):
        self._slide.close()


class TiffFileReader(SlideReader):
    """One level (the first page) of a TIFF, through :class:`TiffRegionReader`."""

    def __init__(self, path):
        self._reader = TiffRegionReader(path)
        self.path = Path(path)
        self.backend = 'tifffile'
        self.level_dimensions = ((self._reader.width, self._reader.height),)
        self.level_downsamples = (1.0,)
        self.mpp = self._reader.mpp

    def _read(self, level, x, y, w, h):
        return np.ascontiguousarray(self._reader.read_region(x, y, w, h))

    def close(self):
        self._reader.close()


def _open_tiff_fallback(path, max_whole_pixels=MAX_WHOLE_PIXELS):
    """A TIFF that OpenSlide cannot open: region reads with tifffile, or, for a
    compression tifffile cannot decode here, a whole decode with PIL if small enough."""
    return open_tiff(path, lambda p: _open_image(p, max_whole_pixels), max_whole_pixels,
                     region_reader=TiffFileReader)


def _open_image(path, max_whole_pixels):
    """A file decoded whole by PIL (OpenSlide's ``ImageSlide``)."""
    from PIL import Image, UnidentifiedImageError

    import openslide
    try:
        with Image.open(path) as im:
            width, height = im.size
    except (UnidentifiedImageError, OSError) as err:
        raise ValueError(f'{path}: not an image PIL can read ({err})') from err
    if width * height > max_whole_pixels:
        raise ValueError(f'{path}: {width}x{height} is too large to decode whole (more '
                         f'than {max_whole_pixels} pixels); convert it to a tiled '
                         'pyramidal TIFF')
    return OpenSlideReader(openslide.ImageSlide(str(path)), path, backend='pil')


def open_slide(path, max_whole_pixels=MAX_WHOLE_PIXELS) -> SlideReader:
    """Open ``path`` with the first backend that can read it (see the module doc).

    Raises:
        FileNotFoundError: ``path`` is not a file.
        ValueError: no backend can read the file (the message names each one's reason).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f'{path}: slide file not found')
    suffix = path.suffix.lower()
    if suffix in IMAGE_SUFFIXES:
        return _open_image(path, max_whole_pixels)

    import openslide
    reason = 'not a format OpenSlide recognises'
    if openslide.OpenSlide.detect_format(str(path)) is not None:
        try:
            return OpenSlideReader(openslide.OpenSlide(str(path)), path)
        except openslide.OpenSlideError as err:
            reason = f'OpenSlide cannot open it ({err})'
    if suffix not in TIFF_SUFFIXES:
        raise ValueError(f'{path}: cannot read the slide: {reason}')
    try:
        return _open_tiff_fallback(path, max_whole_pixels)
    except ValueError as err:
        raise ValueError(f'{path}: cannot read the slide: {reason}, and tifffile '
                         f'cannot either ({err})') from err


class LevelRegions:
    """One level of a slide behind the ``read_region(x0, y0, w, h)`` reader interface of
    :mod:`cellio.images` (dataset converters read slides through it)."""

    def __init__(self, slide: SlideReader, level: int = 0):
        self.slide, self.level = slide, level

    def read_region(self, x0, y0, w, h):
        """RGB ``uint8`` pixels of ``[x0, x0 + w) x [y0, y0 + h)`` of the level."""
        return self.slide.read_region(self.level, x0, y0, w, h)

    def close(self):
        self.slide.close()


def open_level_regions(path, level: int = 0) -> LevelRegions:
    """:func:`open_slide` at one level, as a region reader of the dataset converters."""
    return LevelRegions(open_slide(path), level)


def find_slides(path):
    """The slide files of a directory (sorted, not recursive), or ``[path]`` for a file.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: a directory without slide files.
    """
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f'{path}: no such slide file or directory')
    slides = sorted(p for p in path.iterdir()
                    if p.is_file() and p.suffix.lower() in SLIDE_SUFFIXES)
    if not slides:
        raise ValueError(f'{path}: no slide files ({", ".join(SLIDE_SUFFIXES)})')
    return slides
