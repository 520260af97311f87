"""CRCHistoPhenotypes nuclei -> tiled COCO files: binary detection or four classes.

The protocol: docs/method.md#datasets-and-deletion; the raw layouts: docs/datasets.md.

Raw layouts (``--src`` is any folder above the ``imgN`` folders)::

    official download:   Detection/img1/img1.bmp, img1_detection.mat
                         Classification/img1/img1_epithelial.mat, ..._fibroblast.mat,
                         ..._inflammatory.mat, ..._others.mat
    split folders:       cls_and_det/{train,validation,test}/img1/img1.bmp,
                         img1_detection.mat, img1_<class>.mat and other BMPs
                         (img1_original.bmp, img1_classification.bmp, ...)

Every ``imgN_detection.mat`` below ``--src`` names an image ``imgN``; its image is
``imgN.bmp`` beside it (the other BMPs are ignored); ``imgN_<class>.mat`` are looked for
beside it and in a ``Classification/imgN`` folder. The split folders are not a split: the
images are split 4:1:1 by image with a fixed validation set and 5 folds (Section 3.1.2).

Each ``.mat`` holds a float64 (N, 2) array ``detection`` of MATLAB (1-based, possibly
sub-pixel) ``x, y`` nucleus centres, empty as (0, 0) or (0, 2); 1 is subtracted to get
0-based pixels. Points up to :data:`BORDER_TOLERANCE` pixel outside the image are clipped
onto its border pixels (the official files have nine such points, at most 0.85 px out;
counted as ``clipped_points``); farther ones are errors. Each nucleus becomes a 12 x 12
box centred on its point, clipped to the image; 250 x 250 tiles overlap by 50 pixels.
Every image entry records :data:`MPP` (``mpp``, µm per pixel).

``--classes`` (:func:`classify`): the four classes of the classification files. The
nuclei are those of ``imgN_detection.mat``; a classified point gives its class to the
nearest detected nucleus within :data:`CLASS_MATCH_RADIUS` px (one to one, nearest pairs
first). A classified point without such a nucleus is a nucleus of its own
(``classified_only``); a detected nucleus that no classified point names is
*unclassified* (about 7.3k of 29.8k): it is written with ``iscrowd=1`` and
``unclassified=true`` (category ``others``, which nothing reads), so the dataset loads it
as an ignored instance, neither a cell nor background in training and don't-care in the
evaluation (docs/method.md#unclassified-nuclei).
"""
import re
from pathlib import Path

import numpy as np
import scipy.io

from data_prep.points import check_points_inside
from data_prep.writer import SourceImage, add_common_arguments, write_raw_dataset
from cellio.images import LazyImageReader, image_size

BINARY_CATEGORIES = ('nucleus',)
#: The classes of the classification files, in their category order.
CLASSES = ('epithelial', 'fibroblast', 'inflammatory', 'others')
DETECTION_FILE = re.compile(r'(img\d+)_detection\.mat')
MAT_VARIABLE = 'detection'
#: Micrometres per pixel of the images (20x, about 0.55 µm/px by the dataset's paper,
#: Sirinukunwattana et al. 2016).
MPP = 0.55
#: Points at most this far (pixels) outside the image are clipped onto its border.
BORDER_TOLERANCE = 1.0
#: Largest distance (pixels) at which a classified point names a detected nucleus: half
#: the 12 px box (82 of the 22,444 classified points do not coincide with a detected one;
#: all but one of them lie within 6 px of one).
CLASS_MATCH_RADIUS = 6.0


def add_arguments(parser):
    """Options of ``prepare.py crchisto``."""
    add_common_arguments(parser, tile=250, overlap=50, box_size=12, n_folds=5)
    parser.add_argument('--classes', action='store_true',
                        help='four classes (epithelial, fibroblast, inflammatory, others) '
                             'from the imgN_<class>.mat files; unclassified nuclei are '
                             'ignored regions (default: binary nuclei)')


def _display(path, src):
    """``path`` relative to ``src`` where it lies below it, else as it is."""
    path = Path(path)
    return path.relative_to(src).as_posix() if path.is_relative_to(src) else str(path)


def find_image_folders(src):
    """``{imgN: folder holding imgN_detection.mat}`` below ``src``, in numeric order.

    Raises:
        ValueError: no detection file below ``src``, or one image in two folders.
    """
    folders = {}
    for mat in sorted(Path(src).rglob('img*_detection.mat')):
        match = DETECTION_FILE.fullmatch(mat.name)
        if match is None:
            continue
        name = match.group(1)
        if name in folders:
            raise ValueError(f'{name}: detection files in two folders, '
                             f'{_display(folders[name], src)} and '
                             f'{_display(mat.parent, src)}; expected each image once')
        folders[name] = mat.parent
    if not folders:
        raise ValueError(f'{src}: no CRCHistoPhenotypes detection files found (expected '
                         'Detection/img1/img1_detection.mat or '
                         'cls_and_det/train/img1/img1_detection.mat below --src)')
    return dict(sorted(folders.items(), key=lambda item: int(item[0][3:])))


def read_points_mat(path, display):
    """0-based ``(x, y)`` points (N, 2) of a CRCHistoPhenotypes ``.mat`` file.

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


def clip_to_image(points, width, height, display):
    """``(points, n_clipped)``: points up to :data:`BORDER_TOLERANCE` px outside the
    ``0 <= x < width``, ``0 <= y < height`` image moved onto its border pixels (``0``,
    ``width - 1``, ``height - 1``).

    Raises:
        ValueError: naming ``display``, the entry and the image size, for a point farther
            outside.
    """
    x, y = points[:, 0], points[:, 1]
    tol = BORDER_TOLERANCE
    near = (x >= -tol) & (x < width + tol) & (y >= -tol) & (y < height + tol)
    check_points_inside(np.where(near[:, None], 0.0, points), width, height,
                        f'{display} (after subtracting 1 from the MATLAB coordinates; '
                        f'points up to {tol:g} px outside are clipped)')
    outside = (x < 0) | (x >= width) | (y < 0) | (y >= height)
    clipped = np.stack([x.clip(0, width - 1), y.clip(0, height - 1)], axis=1)
    return np.where(outside[:, None], clipped, points), int(outside.sum())


def match_classes(nuclei, classified, radius=CLASS_MATCH_RADIUS):
    """One-to-one pairs of detected nuclei and classified points, nearest first.

    Args:
        nuclei: (N, 2) detected points.
        classified: (M, 2) classified points.
        radius: largest distance of a pair.

    Returns:
        ``(nucleus_of, matched)``: for each classified point the index of its nucleus or
        -1; and an (N,) bool array, nucleus named by a classified point.
    """
    nucleus_of = np.full(len(classified), -1, dtype=np.int64)
    matched = np.zeros(len(nuclei), dtype=bool)
    if len(nuclei) == 0 or len(classified) == 0:
        return nucleus_of, matched
    distance = np.linalg.norm(classified[:, None, :] - nuclei[None, :, :], axis=-1)
    pairs = np.argwhere(distance <= radius)
    order = np.argsort(distance[pairs[:, 0], pairs[:, 1]], kind='stable')
    for i, j in pairs[order]:
        if nucleus_of[i] < 0 and not matched[j]:
            nucleus_of[i] = j
            matched[j] = True
    return nucleus_of, matched


def classify(nuclei, classified):
    """The nuclei of one image with the classes of the classification files.

    Args:
        nuclei: (N, 2) detected points.
        classified: ``{class index 1..4: (M_c, 2) points}``.

    Returns:
        ``(points, labels, unclassified, counts)``: the detected nuclei followed by the
        classified points without a nucleus; labels 1..4 (4, ``others``, for the
        unclassified); (K,) bool, unclassified; ``classified_only`` and
        ``unclassified`` counts.
    """
    class_points = np.concatenate([classified[c] for c in sorted(classified)]).reshape(-1, 2)
    class_labels = np.concatenate([np.full(len(classified[c]), c)
                                   for c in sorted(classified)]).astype(np.int64)
    nucleus_of, matched = match_classes(nuclei, class_points)
    labels = np.full(len(nuclei), len(CLASSES), dtype=np.int64)
    labels[nucleus_of[nucleus_of >= 0]] = class_labels[nucleus_of >= 0]
    alone = nucleus_of < 0
    points = np.concatenate([nuclei, class_points[alone]])
    labels = np.concatenate([labels, class_labels[alone]])
    unclassified = np.concatenate([~matched, np.zeros(int(alone.sum()), dtype=bool)])
    return points, labels, unclassified, dict(classified_only=int(alone.sum()),
                                              unclassified=int((~matched).sum()))


def _class_files(src, folder, name):
    """``{class index: path}`` of the classification files of image ``name``: beside its
    detection file (split folders) or in ``Classification/<name>`` (official layout)."""
    for place in (folder, folder.parent.parent / 'Classification' / name):
        paths = {c: place / f'{name}_{cls}.mat' for c, cls in enumerate(CLASSES, start=1)}
        if any(p.is_file() for p in paths.values()):
            missing = [p.name for p in paths.values() if not p.is_file()]
            if missing:
                raise ValueError(f'{_display(place, src)}: {", ".join(missing)} missing '
                                 f'(--classes needs all four {name}_<class>.mat files)')
            return paths
    raise ValueError(f'{name}: no classification files (--classes needs '
                     f'{name}_epithelial.mat ... beside {_display(folder, src)}/'
                     f'{name}_detection.mat or in Classification/{name}/)')


def load_image(src, name, folder, with_classes):
    """``(SourceImage, counts)`` of image ``name``."""
    image_path = folder / f'{name}.bmp'
    if not image_path.is_file():
        raise ValueError(f'{_display(image_path, src)}: missing (every imgN folder needs '
                         'imgN.bmp beside imgN_detection.mat)')
    width, height = image_size(image_path)
    counts = dict(clipped_points=0)

    def read(path):
        display = _display(path, src)
        points, clipped = clip_to_image(read_points_mat(path, display), width, height,
                                        display)
        counts['clipped_points'] += clipped
        return points

    points = read(folder / f'{name}_detection.mat')
    labels = np.ones(len(points), dtype=np.int64)
    extra = {}
    if with_classes:
        classified = {c: read(path)
                      for c, path in _class_files(src, folder, name).items()}
        points, labels, unclassified, class_counts = classify(points, classified)
        counts.update(class_counts)
        extra = dict(iscrowd=unclassified.astype(int).tolist(),
                     unclassified=unclassified.tolist())
    image = SourceImage(source=_display(image_path, src), group=name,
                        reader=LazyImageReader(image_path), width=width, height=height,
                        labels=labels, points=points, extra=extra, mpp=MPP)
    return image, counts


def load_images(src, with_classes=False):
    """``(images, counts)``: a :class:`SourceImage` per image and the raw counts
    (``images``, ``nuclei``, ``clipped_points``; with classes per class, ``unclassified``
    and ``classified_only``)."""
    src = Path(src)
    images = []
    counts = dict(images=0, nuclei=0, clipped_points=0)
    for name, folder in find_image_folders(src).items():
        image, image_counts = load_image(src, name, folder, with_classes)
        images.append(image)
        counts['images'] += 1
        counts['nuclei'] += len(image.points)
        for key, value in image_counts.items():
            counts[key] = counts.get(key, 0) + value
    if with_classes:
        labels = np.concatenate([im.labels[~np.asarray(im.extra['iscrowd'], bool)]
                                 for im in images])
        counts.update({cls: int((labels == c).sum())
                       for c, cls in enumerate(CLASSES, start=1)})
    return images, counts


def prepare(args):
    """Convert ``args.src`` to ``args.out``; returns the writer summary + raw counts."""
    images, counts = load_images(args.src, args.classes)
    categories = CLASSES if args.classes else BINARY_CATEGORIES
    return write_raw_dataset(args, categories, images, counts)
