"""Region readers: the only way :mod:`data_prep.writer` reads pixels.

A reader is any object with

    read_region(x0, y0, w, h) -> np.ndarray   # (h, w, 3) uint8 RGB

and optionally ``close()``, which the writer calls once it has finished with the image.
Large TIFFs get a reader that decodes only the requested region (data_prep/image_io.py);
ordinary images use the two readers below.
"""
from pathlib import Path

import cv2
import numpy as np


def _check_region(name, x0, y0, w, h, width, height):
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
        _check_region(self.name, x0, y0, w, h, self.width, self.height)
        return self.array[y0:y0 + h, x0:x0 + w]


class ImageFileReader:
    """Regions of an ordinary image file (PNG, BMP, JPEG, small TIFF), read lazily.

    The file is decoded on the first ``read_region`` call and kept until ``close()``.
    Grey images are expanded to RGB and an alpha channel is dropped.
    """

    def __init__(self, path):
        self.path = Path(path)
        self._array = None

    def _load(self):
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
        _check_region(str(self.path), x0, y0, w, h, width, height)
        return self._array[y0:y0 + h, x0:x0 + w]

    def close(self):
        self._array = None
