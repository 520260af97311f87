"""Region reads of large TIFFs with tifffile, one strip or tile at a time.

:class:`TiffRegionReader` decodes only the strips or tiles of the first page that
intersect the requested region (``tifffile`` segment offsets + ``TiffPage.decode``), and
reads uncompressed strips row by row, so a tile of a 20000 x 20000 slide costs memory
of the order of the tile, never of the slide. Grey and palette pages are expanded to
RGB, extra samples (alpha) dropped; only 8-bit samples are accepted. LZW / JPEG
segments need the ``imagecodecs`` package (``pip install -e ".[tiff]"``); without it
the reader raises :class:`UnsupportedCompression` and its callers decide whether the
image is small enough to decode whole.

Used by the whole-slide reader (:mod:`cellio.slides`, for TIFFs OpenSlide cannot
open) and by the image readers of the dataset converters (:mod:`cellio.images`).
Only numpy and tifffile are imported.
"""
import math
from pathlib import Path

import numpy as np
import tifffile

#: Suffixes of TIFF files.
TIFF_SUFFIXES = ('.tif', '.tiff')


def _decodable(page):
    """Whether tifffile can decode the page's compression in this environment."""
    if page.compression == 1:
        return True
    try:
        tifffile.TIFF.DECOMPRESSORS[page.compression]
    except (KeyError, ValueError):  # e.g. LZW / JPEG without imagecodecs
        return False
    return True


class UnsupportedCompression(ValueError):
    """tifffile cannot decode the TIFF's compression without ``imagecodecs``."""


class TiffRegionReader:
    """Read regions of the first page of a (possibly huge) TIFF, segment by segment.

    Only the strips / tiles intersecting a requested region are read from disk and
    decoded; uncompressed strips are read row by row.

    Args:
        path: TIFF file.

    Raises:
        ValueError: the file is not a readable TIFF, is not 8-bit or has an
            unsupported photometric interpretation.
        UnsupportedCompression: tifffile cannot decode the compression here (install
            ``imagecodecs``; the callers fall back to decoding small images whole).
    """

    def __init__(self, path):
        self.path = Path(path)
        try:
            self._tif = tifffile.TiffFile(self.path)
            page = self._tif.pages.first
        except (tifffile.TiffFileError, OSError, IndexError) as err:
            raise ValueError(f'{self.path}: not a readable TIFF ({err})') from err
        try:
            self._setup(page)
        except Exception:
            self._tif.close()
            raise

    @property
    def mpp(self):
        """Micrometres per pixel from the resolution tags (``XResolution``,
        ``YResolution`` in pixels per inch or per centimetre, ``ResolutionUnit`` 2 or 3),
        the mean of x and y; None when a tag is missing: without an explicit unit the
        values are a screen resolution, not the scanner's."""
        tags = self._page.tags
        unit = tags.get('ResolutionUnit')
        per_unit = {2: 25400.0, 3: 10000.0}.get(int(unit.value)) if unit else None
        values = []
        for name in ('XResolution', 'YResolution'):
            tag = tags.get(name)
            if per_unit is None or tag is None:
                return None
            numerator, denominator = tag.value
            if numerator <= 0 or denominator <= 0:
                return None
            values.append(per_unit * denominator / numerator)
        return sum(values) / 2

    def read_region(self, x0, y0, w, h):
        """RGB ``uint8`` pixels of the region ``[x0, x0+w) x [y0, y0+h)``."""
        x0, y0, w, h = int(x0), int(y0), int(w), int(h)
        if w <= 0 or h <= 0 or x0 < 0 or y0 < 0 or x0 + w > self.width \
                or y0 + h > self.height:
            raise ValueError(
                f'{self.path}: region x0={x0} y0={y0} w={w} h={h} is not inside the '
                f'{self.width}x{self.height} image')
        out = np.zeros((h, w, self._samples), np.uint8)
        if self._row_reads:
            self._read_rows(out, x0, y0)
        else:
            self._read_segments(out, x0, y0)
        return self._to_rgb(out)

    def close(self):
        """Release the file (the reader cannot be used afterwards)."""
        self._tif.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _setup(self, page):
        self._page = page
        planes, depth, self.height, self.width, contig = page.shaped
        if depth != 1:
            raise ValueError(f'{self.path}: volumetric TIFF pages are not supported')
        if page.dtype != np.uint8:
            raise ValueError(f'{self.path}: expected 8-bit samples, got {page.dtype}')
        photometric = tifffile.PHOTOMETRIC
        if page.photometric not in (photometric.MINISBLACK, photometric.RGB,
                                    photometric.PALETTE, photometric.YCBCR):
            raise ValueError(f'{self.path}: unsupported photometric interpretation '
                             f'{photometric(page.photometric).name}')
        if page.photometric == photometric.YCBCR and page.compression != 7:
            raise ValueError(f'{self.path}: YCbCr is only supported JPEG-compressed')
        if not _decodable(page):
            compression = tifffile.COMPRESSION(page.compression).name
            raise UnsupportedCompression(
                f'{self.path}: tifffile cannot decode {compression}-compressed '
                f'segments without the imagecodecs package (pip install imagecodecs)')
        self._samples = planes * contig
        if page.is_tiled:
            self._seg_w, self._seg_h = page.tilewidth, page.tilelength
        else:
            self._seg_w, self._seg_h = self.width, min(page.rowsperstrip, self.height)
        self._grid_w = math.ceil(self.width / self._seg_w)
        self._grid_h = math.ceil(self.height / self._seg_h)
        self._row_reads = (page.compression == 1 and not page.is_tiled
                           and page.planarconfig == 1 and page.bitspersample == 8)

    def _read_rows(self, out, x0, y0):
        """Uncompressed contiguous strips: read just the needed bytes of each row."""
        page, fh = self._page, self._tif.filehandle
        h, w, samples = out.shape
        row_bytes = self.width * samples
        for row in range(y0, y0 + h):
            strip, row_in_strip = divmod(row, self._seg_h)
            fh.seek(page.dataoffsets[strip] + row_in_strip * row_bytes + x0 * samples)
            data = fh.read(w * samples)
            if len(data) != w * samples:
                raise ValueError(f'{self.path}: truncated strip {strip} (row {row})')
            out[row - y0] = np.frombuffer(data, np.uint8).reshape(w, samples)

    def _read_segments(self, out, x0, y0):
        """Decode every strip / tile that intersects the region and paste its part."""
        page, fh = self._page, self._tif.filehandle
        h, w, _ = out.shape
        planes = page.shaped[0]
        cols = range(x0 // self._seg_w, (x0 + w - 1) // self._seg_w + 1)
        rows = range(y0 // self._seg_h, (y0 + h - 1) // self._seg_h + 1)
        per_plane = self._grid_w * self._grid_h
        for plane in range(planes):
            for row in rows:
                for col in cols:
                    index = plane * per_plane + row * self._grid_w + col
                    data = None
                    if page.databytecounts[index] > 0:
                        fh.seek(page.dataoffsets[index])
                        data = fh.read(page.databytecounts[index])
                    segment, (sample, _, sy, sx, _), _ = page.decode(
                        data, index, jpegtables=page.jpegtables)
                    if segment is None:  # sparse TIFF: missing segment stays zero
                        continue
                    segment = segment[0]  # (length, width, contig samples)
                    ya, yb = max(y0, sy), min(y0 + h, sy + segment.shape[0])
                    xa, xb = max(x0, sx), min(x0 + w, sx + segment.shape[1])
                    if ya >= yb or xa >= xb:
                        continue
                    channels = slice(sample, sample + segment.shape[2])
                    out[ya - y0:yb - y0, xa - x0:xb - x0, channels] = \
                        segment[ya - sy:yb - sy, xa - sx:xb - sx]

    def _to_rgb(self, out):
        """Samples -> RGB: palette lookup, grey replicated, extra samples dropped."""
        if self._page.photometric == tifffile.PHOTOMETRIC.PALETTE:
            colormap = np.asarray(self._page.colormap)
            if colormap.max() > 255:  # 16-bit colour map
                colormap = colormap >> 8
            return np.ascontiguousarray(colormap.T.astype(np.uint8)[out[..., 0]])
        if out.shape[2] < 3:  # grey (+ alpha)
            return np.repeat(out[..., :1], 3, axis=2)
        return np.ascontiguousarray(out[..., :3])


def tiff_size(path):
    """``(width, height)`` of the first page of a TIFF, read from its header only.

    Raises:
        ValueError: the file is not a readable TIFF.
    """
    try:
        with tifffile.TiffFile(path) as tif:
            _, _, height, width, _ = tif.pages.first.shaped
    except (tifffile.TiffFileError, OSError, IndexError) as err:
        raise ValueError(f'{path}: not a readable TIFF ({err})') from err
    return width, height
