"""Instance label images (one integer id per object, 0 = background) and the intensity
images they annotate.

* :func:`read_label_image` -- an (H, W) ``int64`` id image from an 8/16/32-bit grey PNG
  or TIFF, a palette PNG (the palette index is the id), or an RGB(A) image whose ids are
  packed in named channels (``channels='GB'``: ``id = G * 256 + B``; with an alpha
  channel, pixels of alpha 0 are background whatever their colour);
* :func:`instances` -- each id's bounding box, centre point and area;
* :func:`id_pieces`, :func:`check_instance_ids` -- the 8-connected pieces of each id, and
  the refusal of binary or semantic masks (two pieces per id or more);
* :func:`read_type_image`, :func:`instance_types` -- a type image (one class number per
  pixel, 0 = background: CoNSeP, Lizard, PanNuke, HoVer-Net) and the type of each
  instance, the one most of its typed pixels have;
* :func:`read_intensity_image` -- an 8-bit RGB view of a grey or colour image of any bit
  depth (images of more than 8 bits, or every image, stretched between two percentiles).

``data_prep/prepare.py masks`` converts them. mnfinder ships such label images; most
other public nuclei datasets must first be exported to them (PNG or TIFF): MoNuSeg
(XML polygons), CoNSeP and Lizard (``.mat``), PanNuke (``.npy``), DSB 2018 (one PNG per
nucleus, to merge). TIFFs must hold one page: a stack is an error.
"""
from pathlib import Path
from typing import Optional, Tuple

import numpy as np

from .tiff import TIFF_SUFFIXES

#: Channel letters of an RGB(A) label image, in array order.
CHANNELS = 'RGBA'
#: Default percentiles between which an image is stretched to 0..255 (:func:`to_uint8`).
STRETCH_PERCENTILES = (0.1, 99.9)
#: Which images :func:`to_uint8` stretches: those of more than 8 bits, or every image.
STRETCH_MODES = ('deep', 'all')


def _read_array(path: Path) -> np.ndarray:
    """The pixels of ``path`` as stored: TIFFs through tifffile (one page), other
    formats through Pillow (a palette image gives its indices).

    Raises:
        FileNotFoundError: no such file.
        ValueError: an unreadable file, or a TIFF stack (its first image of several
            pages; reduced-resolution levels and thumbnails do not count).
    """
    try:
        if path.suffix.lower() in TIFF_SUFFIXES:
            pages, axes, array = _read_tiff(path)
        else:
            from PIL import Image
            with Image.open(path) as image:
                return np.asarray(image)
    except FileNotFoundError:
        raise FileNotFoundError(f'{path}: image file not found') from None
    except Exception as err:  # Pillow and tifffile raise many kinds for broken files
        raise ValueError(f'{path}: cannot be read as an image ({err})') from err
    if pages > 1:
        raise ValueError(f'{path}: a TIFF stack of {pages} pages (axes {axes}); expected '
                         'one 2-D image per file (one page): save each plane as its own '
                         'file')
    return array


def _read_tiff(path: Path) -> Tuple[int, str, Optional[np.ndarray]]:
    """``(pages, axes, pixels)`` of the first image series of a TIFF; ``pixels`` are
    read only when it has one page."""
    import tifffile
    with tifffile.TiffFile(path) as tiff:
        series = tiff.series[0]
        pages = len(series.pages)
        return pages, series.axes, series.asarray() if pages == 1 else None


def parse_channels(text: Optional[str]) -> Optional[str]:
    """Validate a channel order such as ``'GB'`` or ``'RGB'`` (most significant byte
    first); ``None`` stays ``None``."""
    if text is None:
        return None
    order = text.upper()
    if not order or any(c not in 'RGB' for c in order) or len(set(order)) != len(order):
        raise ValueError(f'channel order {text!r}: expected distinct letters of R, G, B, '
                         'most significant byte first (e.g. GB for id = G * 256 + B)')
    return order


def read_label_image(path, channels: Optional[str] = None) -> np.ndarray:
    """The (H, W) ``int64`` instance ids of a label image (0 = background).

    Args:
        path: PNG or TIFF label image.
        channels: for an RGB(A) label image, the channels holding the id, most
            significant byte first (``'GB'``: ``id = G * 256 + B``); required for RGB(A)
            images, refused for grey ones.

    Raises:
        ValueError: an unreadable file, negative or non-integer ids, an RGB(A) image
            without ``channels`` (or ``channels`` on a grey image).
    """
    path = Path(path)
    array = _read_array(path)
    order = parse_channels(channels)
    if array.ndim == 2:
        if order is not None:
            raise ValueError(f'{path}: a grey label image (one channel), but ids packed in '
                             f'channels {order} were asked for; leave the channel option '
                             'out for grey label images')
        if not np.issubdtype(array.dtype, np.integer):
            raise ValueError(f'{path}: label image of {array.dtype} values; expected '
                             'integer ids (8, 16 or 32 bits)')
        ids = array.astype(np.int64)
        if ids.min(initial=0) < 0:
            raise ValueError(f'{path}: negative id {ids.min()}; expected ids >= 0 '
                             '(0 = background)')
        return ids
    if array.ndim != 3 or array.shape[2] not in (3, 4):
        raise ValueError(f'{path}: label image of shape {array.shape}; expected (H, W) '
                         'ids or (H, W, 3|4) RGB(A) with packed ids')
    if order is None:
        raise ValueError(f'{path}: an RGB{"A" if array.shape[2] == 4 else ""} label '
                         'image; say which channels hold the id, most significant byte '
                         'first (e.g. --rgb-ids GB for id = G * 256 + B)')
    if array.dtype != np.uint8:
        raise ValueError(f'{path}: RGB label image of {array.dtype}; packed ids need '
                         '8-bit channels')
    ids = np.zeros(array.shape[:2], dtype=np.int64)
    for letter in order:
        ids = ids * 256 + array[..., CHANNELS.index(letter)]
    if array.shape[2] == 4:
        ids[array[..., 3] == 0] = 0
    return ids


def instances(ids: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(labels, boxes, centres, areas)`` of every non-zero id, in increasing id order.

    ``boxes`` are ``[x, y, w, h]`` over all pixels of the id (an id in several pieces is
    one instance, as the label image says), ``centres`` the mean pixel centre ``(x, y)``
    clipped into the box, ``areas`` pixel counts. Touching instances keep their own ids.
    """
    flat = ids.ravel()
    labels, inverse, areas = np.unique(flat, return_inverse=True, return_counts=True)
    keep = labels != 0
    n = len(labels)
    rows, cols = np.divmod(np.arange(flat.size), ids.shape[1])
    x1 = np.full(n, np.inf)
    y1 = np.full(n, np.inf)
    x2 = np.full(n, -np.inf)
    y2 = np.full(n, -np.inf)
    np.minimum.at(x1, inverse, cols)
    np.minimum.at(y1, inverse, rows)
    np.maximum.at(x2, inverse, cols + 1)
    np.maximum.at(y2, inverse, rows + 1)
    cx = np.bincount(inverse, weights=cols + 0.5, minlength=n) / areas
    cy = np.bincount(inverse, weights=rows + 0.5, minlength=n) / areas
    boxes = np.stack([x1, y1, x2 - x1, y2 - y1], axis=1)[keep]
    centres = np.stack([np.clip(cx, x1, x2 - 1e-3), np.clip(cy, y1, y2 - 1e-3)],
                       axis=1)[keep]
    return labels[keep], boxes, centres, areas[keep]


def id_pieces(ids: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(labels, pieces)``: every non-zero id in increasing order (as :func:`instances`)
    and the number of 8-connected pieces its pixels form."""
    from scipy import ndimage
    labels = np.unique(ids)
    labels = labels[labels != 0]
    index = np.where(ids > 0, np.searchsorted(labels, ids) + 1, 0)
    eight = np.ones((3, 3), dtype=bool)
    pieces = [ndimage.label(index[box] == k, structure=eight)[1]
              for k, box in enumerate(ndimage.find_objects(index), start=1)]
    return labels, np.array(pieces, dtype=np.int64)


def check_instance_ids(path, ids: np.ndarray) -> int:
    """The number of ids of the label image ``path`` that are in several 8-connected
    pieces (each such id stays one instance).

    Raises:
        ValueError: the ids form twice as many pieces as there are ids, or more (an only
            id in two pieces, say): a binary or semantic mask (one value per class), not
            instance ids. Instance labels stay far below: mnfinder's worst image has 19
            of its 39 ids in two pieces, 1.5 pieces per id.
    """
    labels, pieces = id_pieces(ids)
    in_pieces = int(np.count_nonzero(pieces > 1))
    if len(labels) and pieces.sum() >= 2 * len(labels):
        worst = int(np.argmax(pieces))
        raise ValueError(
            f'{path}: {in_pieces} of its {len(labels)} id(s) are in several separate '
            f'pieces (id {labels[worst]}: {pieces[worst]} pieces); this looks like a '
            'binary or semantic mask, but instance ids are expected (one integer per '
            'nucleus, 0 for background). Convert it first, e.g. label its connected '
            'components with scipy.ndimage.label or skimage.measure.label')
    return in_pieces


def read_type_image(path, n_types: int) -> np.ndarray:
    """The (H, W) ``int64`` types of a type image: 0 = background (or untyped), ``k`` =
    the ``k``-th class, ``1 <= k <= n_types``; an 8/16/32-bit grey or palette PNG or
    TIFF.

    Raises:
        ValueError: not one integer per pixel, a negative type or one above ``n_types``
            (naming the file, the value, a pixel holding it and the expected range).
    """
    path = Path(path)
    array = _read_array(path)
    if array.ndim != 2 or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f'{path}: type image of {array.dtype} values and shape '
                         f'{array.shape}; expected one integer type per pixel (a grey or '
                         'palette PNG or TIFF, 0 = background)')
    types = array.astype(np.int64)
    bad = (types < 0) | (types > n_types)
    if bad.any():
        y, x = (int(v[0]) for v in np.nonzero(bad))
        raise ValueError(f'{path}: type {types[y, x]} at pixel (x={x}, y={y}); expected '
                         f'0..{n_types} (0 = background, k = the k-th of the '
                         f'{n_types} class name(s)): give a name for every type')
    return types


def instance_types(ids: np.ndarray, types: np.ndarray,
                   n_types: int) -> Tuple[np.ndarray, np.ndarray]:
    """``(type, share)`` of every non-zero id of ``ids``, in increasing id order (as
    :func:`instances`), from the type image ``types`` of the same size.

    Each pixel of an instance votes for its type; background pixels (type 0) do not
    vote. The type is the one with most votes, ties going to the lower type; ``share``
    is its votes over all votes (``< 0.5``: a mixed nucleus, whose type holds no
    majority). An instance without a typed pixel has type 0 and share 0.
    """
    labels = np.unique(ids)
    labels = labels[labels != 0]
    inside = ids > 0
    index = np.searchsorted(labels, ids[inside])
    votes = np.bincount(index * (n_types + 1) + types[inside],
                        minlength=len(labels) * (n_types + 1)).reshape(-1, n_types + 1)
    votes[:, 0] = 0
    best = votes.argmax(axis=1)  # the first of equal counts: the lower type; none: 0
    total = votes.sum(axis=1)
    share = votes[np.arange(len(labels)), best] / np.maximum(total, 1)
    return best, share


def check_percentiles(low: float, high: float) -> Tuple[float, float]:
    """``(low, high)``, the percentiles of a stretch (:func:`to_uint8`).

    Raises:
        ValueError: unless ``0 <= low < high <= 100`` (a reversed pair would map every
            pixel to 0 or 255).
    """
    if not 0 <= low < high <= 100:
        raise ValueError(f'expected percentiles 0 <= LOW < HIGH <= 100, got {low:g} '
                         f'{high:g}')
    return low, high


def to_uint8(array: np.ndarray, percentiles=STRETCH_PERCENTILES,
             stretch: str = 'deep') -> np.ndarray:
    """``array`` as ``uint8``, stretched linearly so that the ``percentiles`` (low, high;
    :func:`check_percentiles`) of its values map to 0 and 255 (clipped).

    ``stretch='deep'`` leaves an 8-bit array unchanged; ``'all'`` stretches it too, so
    that images of different bit depths, exposures and cell densities share one
    intensity scale (the fluorescence practice of per-image percentile normalisation).
    A colour image is stretched with one pair of values over all its channels.
    """
    check_percentiles(*percentiles)
    if stretch not in STRETCH_MODES:
        raise ValueError(f'stretch: expected one of {", ".join(STRETCH_MODES)}, got '
                         f'{stretch!r}')
    if array.dtype == np.uint8 and stretch == 'deep':
        return array
    values = array.astype(np.float64)
    low, high = np.percentile(values, percentiles)
    if not high > low:
        return np.zeros(array.shape, dtype=np.uint8)
    scaled = (values - low) * (255.0 / (high - low))
    return np.clip(np.rint(scaled), 0, 255).astype(np.uint8)


def read_intensity_image(path, percentiles=STRETCH_PERCENTILES,
                         stretch: str = 'deep') -> np.ndarray:
    """(H, W, 3) ``uint8`` RGB of a grey or colour image of any bit depth (grey is
    repeated in the three channels, alpha dropped; see :func:`to_uint8`)."""
    path = Path(path)
    array = _read_array(path)
    if array.ndim == 3 and array.shape[2] in (3, 4):
        array = array[..., :3]
    elif array.ndim != 2:
        raise ValueError(f'{path}: image of shape {array.shape}; expected a grey (H, W) '
                         'or colour (H, W, 3|4) image')
    if array.dtype == bool or not (np.issubdtype(array.dtype, np.integer)
                                   or np.issubdtype(array.dtype, np.floating)):
        raise ValueError(f'{path}: image of {array.dtype} values; expected integers or '
                         'floats')
    array = to_uint8(array, percentiles, stretch)
    if array.ndim == 2:
        array = np.repeat(array[..., None], 3, axis=2)
    return np.ascontiguousarray(array)
