"""CRCHistoPhenotypes detection set -> tiled COCO files.

The protocol: docs/method.md#datasets-and-deletion; the raw layout: docs/datasets.md.

Raw layout (``--src`` is the dataset root, ``CRCHistoPhenotypes_2016_04_28`` or its
``Detection`` folder)::

    CRCHistoPhenotypes_2016_04_28/Detection/img1/img1.bmp            500 x 500, maybe RGBA
    CRCHistoPhenotypes_2016_04_28/Detection/img1/img1_detection.mat  variable `detection`

``detection`` is a float64 (N, 2) array of MATLAB (1-based, possibly sub-pixel) ``x, y``
nucleus centres, empty as (0, 0) or (0, 2); 1 is subtracted to get 0-based pixels. Each
nucleus becomes a 12 x 12 box centred on its point, clipped to the image. Images are cut
into 250 x 250 tiles overlapping by 50 pixels and split 4:1:1 by image with a fixed
validation set and 5 folds (Section 3.1.2). Every image entry records the images'
resolution, :data:`MPP` (``mpp``, µm per pixel).
"""
import re

import numpy as np
import scipy.io

from cellio.images import LazyImageReader, image_size
from data_prep.points import check_points_inside
from data_prep.writer import SourceImage, add_common_arguments, write_raw_dataset

CATEGORIES = ('nucleus',)
IMAGE_PATTERN = re.compile(r'img(\d+)')
MAT_VARIABLE = 'detection'
#: Micrometres per pixel of the images (20x, about 0.55 µm/px by the dataset's paper,
#: Sirinukunwattana et al. 2016).
MPP = 0.55


def add_arguments(parser):
    """Options of ``prepare.py crchisto``."""
    add_common_arguments(parser, tile=250, overlap=50, box_size=12, n_folds=5)


def find_detection_dir(src):
    """The folder holding ``img1/``, ``img2/``...: ``src`` itself or below it."""
    for candidate in (src / 'Detection', src / 'CRCHistoPhenotypes_2016_04_28' / 'Detection',
                      src):
        if candidate.is_dir() and any(IMAGE_PATTERN.fullmatch(p.name) and p.is_dir()
                                      for p in candidate.iterdir()):
            return candidate
    raise ValueError(f'{src}: no CRCHistoPhenotypes detection images found (expected '
                     'CRCHistoPhenotypes_2016_04_28/Detection/img1/img1.bmp, '
                     'Detection/img1/... or img1/... below --src)')


def read_detection_mat(path, display):
    """0-based ``(x, y)`` points (N, 2) of an ``imgN_detection.mat`` file.

    MATLAB coordinates are 1-based: ``x - 1, y - 1`` are returned. Empty arrays of shape
    (0, 0) or (0, 2) give no points.
    """
    try:
        content = scipy.io.loadmat(path)
    except (scipy.io.matlab.MatReadError, ValueError, OSError, TypeError,
            NotImplementedError) as err:  # NotImplementedError: MATLAB v7.3 (HDF5)
        raise ValueError(f'{display}: not a readable MATLAB file ({err})') from err
    if MAT_VARIABLE not in content:
        names = sorted(k for k in content if not k.startswith('__'))
        raise ValueError(f'{display}: no variable {MAT_VARIABLE!r} (found {names}); '
                         'expected an (N, 2) array of 1-based x, y')
    array = np.asarray(content[MAT_VARIABLE])
    if array.size == 0:
        return np.zeros((0, 2))
    if array.ndim != 2 or array.shape[1] != 2 or not np.issubdtype(array.dtype, np.number):
        raise ValueError(f'{display}: variable {MAT_VARIABLE!r} has shape {array.shape} '
                         f'and type {array.dtype}; expected an (N, 2) numeric array of '
                         '1-based x, y')
    points = array.astype(np.float64)
    if not np.isfinite(points).all():
        row = int(np.flatnonzero(~np.isfinite(points).all(axis=1))[0])
        raise ValueError(f'{display}: row {row + 1} of {MAT_VARIABLE!r} is not finite: '
                         f'{points[row].tolist()}')
    return points - 1.0


def snap_to_image(points):
    """Move points within half a pixel outside the top/left edge onto it.

    1-based sub-pixel centres in ``[0.5, 1)`` still lie on the first pixel
    (``[-0.5, 0)`` once 0-based); the writer needs ``0 <= x < width``.
    """
    points = points.copy()
    points[(points >= -0.5) & (points < 0)] = 0.0
    return points


def load_images(src):
    """``(images, counts)``: a :class:`SourceImage` per image and the raw counts."""
    detection_dir = find_detection_dir(src)
    folders = sorted((p for p in detection_dir.iterdir()
                      if p.is_dir() and IMAGE_PATTERN.fullmatch(p.name)),
                     key=lambda p: int(IMAGE_PATTERN.fullmatch(p.name).group(1)))
    images = []
    for folder in folders:
        image_path = folder / f'{folder.name}.bmp'
        mat_path = folder / f'{folder.name}_detection.mat'
        for path in (image_path, mat_path):
            if not path.is_file():
                raise ValueError(f'{path.relative_to(src).as_posix()}: missing (every '
                                 'imgN folder needs imgN.bmp and imgN_detection.mat)')
        display = mat_path.relative_to(src).as_posix()
        width, height = image_size(image_path)
        points = snap_to_image(read_detection_mat(mat_path, display))
        check_points_inside(points, width, height,
                            f'{display} (after subtracting 1 from the MATLAB coordinates)')
        images.append(SourceImage(
            source=image_path.relative_to(src).as_posix(), group=folder.name,
            reader=LazyImageReader(image_path), width=width, height=height,
            labels=np.ones(len(points)), points=points, mpp=MPP))
    counts = dict(images=len(images), nuclei=sum(len(im.points) for im in images))
    return images, counts


def prepare(args):
    """Convert ``args.src`` to ``args.out``; returns the writer summary + raw counts."""
    images, counts = load_images(args.src)
    return write_raw_dataset(args, CATEGORIES, images, counts)
