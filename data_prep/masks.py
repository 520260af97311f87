"""Instance label images -> tiled COCO files (``prepare.py masks``).

Usage::

    python data_prep/prepare.py masks --images IMAGES --masks MASKS --out OUT \\
        [--rgb-ids GB] [--class nucleus | --type-masks TYPES --class-names A,B,...] \\
        [--group-regex REGEX] \\
        [--val-regex REGEX --test-regex REGEX [--test-regex REGEX ...]] [--tile 256] \\
        [--percentiles 0.1 99.9] [--stretch {deep,all}] \\
        [--scale F | --target-mpp T --mpp M | --nucleus-size PX] [--mpp M]

Every image below ``--images`` (PNG, TIFF, JPEG, BMP, any case; searched recursively,
leaving out ``--masks`` when it lies inside) is paired with the label image of the same
relative path and stem below ``--masks`` (PNG or TIFF, any case; ``--image-suffix`` picks
one image where a stem has several). A label image holds one
integer id per instance and 0 for background: 8/16/32-bit grey, a palette PNG, or ids
packed in RGB(A) channels (``--rgb-ids GB``: ``id = G * 256 + B``, alpha 0 is
background). Each instance becomes a box (all its pixels) and a centre point (its mean
pixel), the COCO layout of docs/design.md. Intensity images of more than 8 bits
(fluorescence) are stretched between the ``--percentiles``; ``--stretch all`` stretches
8-bit images too, so that sets of different bit depths and exposures share one scale.

Classes. Without ``--type-masks`` every instance is one class, ``--class``. With
``--type-masks DIR --class-names A,B,...`` each label image has a type image of the same
relative path and stem below ``DIR`` (one type per pixel, 0 = background; the type image
of CoNSeP, Lizard, PanNuke or HoVer-Net exports), type ``k`` naming the ``k``-th class:
a nucleus takes the type most of its pixels have (background pixels do not vote, ties
go to the lower type; :func:`~cellio.instance_masks.instance_types`). A nucleus
without a typed pixel is *unclassified*: written as an ignored annotation (``iscrowd``
1: neither a cell nor background in training and evaluation). A nucleus whose type holds
less than half of its typed pixels (:data:`MIXED_SHARE`) still takes it and is counted
as ``mixed``. A type above the number of names is an error naming the file and value.

Resolution (:mod:`data_prep.scaling`). ``--scale F``, ``--target-mpp T`` with ``--mpp
M`` (factor ``M / T``) or ``--nucleus-size PX`` resample every image (and its boxes and
points) while converting, so that nuclei of any magnification reach the 12-40 px the
models are built for; ``--mpp`` alone records the pixel size. The report gives the
nuclei's box sides after resampling and warns, with the ``--scale`` to use, when their
median lies outside :data:`~data_prep.scaling.COMFORTABLE_SIDES`.

Defined outcomes:

* an instance cut by a tile edge belongs to the tile that holds its centre point, with
  its box clipped to the tile (as every dataset here; the next tile shows it unlabeled);
* touching instances keep their own ids; an id in several 8-connected pieces is one
  instance (counted as ``ids_in_pieces``), but a label image whose ids form two pieces
  per id or more (its only id in two pieces, say) is an error: a binary or semantic mask;
* an empty label image gives an image without cells (its tiles are unlabeled data,
  unless ``--drop-empty-tiles``);
* a label image (or type image) whose size differs from its image, an image without a
  label image (or type image), a label or type image without an image, two candidate
  files for one stem: errors naming the files.

Splits: by group (``--group-regex``: the first capture group, else the whole match,
searched in the image's path relative to ``--images``; default: each image its own
group) with ``--seed``, 4:1:1 or ``--n-folds K`` folds with one validation set
(:func:`~data_prep.splits.fold_ratios`: a sixth of the groups validates, each fold
tests on a K-th of the rest); or explicit held-out folds:
``--test-regex`` once per fold (its test groups) and ``--val-regex`` (the validation
groups of every fold, except those a fold tests on). The patterns fix those folds, so
``--n-folds`` and ``--seed`` are refused with them.
"""
import argparse
from pathlib import Path

import numpy as np

from data_prep.splits import (compile_group_regex, fold_ratios, group_of,
                              split_by_patterns, split_groups)
from data_prep.scaling import (add_scale_arguments, box_sides, image_scale,
                               nucleus_scale, rescale, size_line, size_report)
from data_prep.writer import (SourceImage, add_common_arguments, command_options,
                              write_dataset)
from cellio.images import ArrayReader
from cellio.instance_masks import (STRETCH_MODES, STRETCH_PERCENTILES,
                                   check_instance_ids, check_percentiles,
                                   instance_types, instances, parse_channels,
                                   read_intensity_image, read_label_image,
                                   read_type_image)

IMAGE_SUFFIXES = ('.png', '.tif', '.tiff', '.jpg', '.jpeg', '.bmp')
MASK_SUFFIXES = ('.png', '.tif', '.tiff')
#: ``--seed`` and ``--n-folds`` of the random split when not given (4:1:1).
RANDOM_SPLIT_SEED = 0
RANDOM_SPLIT_FOLDS = 1
#: The one class of a set without types (``--class``).
DEFAULT_CLASS = 'nucleus'
#: A nucleus whose type holds less than this share of its typed pixels is ``mixed``.
MIXED_SHARE = 0.5


def add_arguments(parser):
    """Options of ``prepare.py masks``."""
    parser.add_argument('--images', type=Path, required=True,
                        help='directory of the images (searched recursively; only read)')
    parser.add_argument('--masks', type=Path, required=True,
                        help='directory of the label images, same relative paths and '
                             'stems (only read)')
    parser.add_argument('--image-suffix', default=None,
                        help='the image suffix to take where a stem has several (e.g. .png)')
    parser.add_argument('--rgb-ids', type=_channels, default=None, metavar='CHANNELS',
                        help='ids packed in RGB(A) label images, most significant byte '
                             'first: GB = G*256 + B, RGB = R*65536 + G*256 + B (alpha 0 '
                             'is background)')
    parser.add_argument('--class', dest='class_name', default=None,
                        help=f'name of the one cell class (default {DEFAULT_CLASS}; with '
                             '--type-masks: --class-names)')
    parser.add_argument('--type-masks', type=Path, default=None, metavar='DIR',
                        help='directory of type images, same relative paths and stems '
                             '(one type per pixel, 0 = background): each nucleus takes the '
                             'type of most of its pixels; needs --class-names')
    parser.add_argument('--class-names', default=None, metavar='A,B,...',
                        help='with --type-masks: the class of type 1, 2, ... in order')
    parser.add_argument('--group-regex', default=None,
                        help='split key of an image: the first group (else the whole '
                             'match) of this expression in its relative path (default: '
                             'the image itself)')
    parser.add_argument('--val-regex', default=None,
                        help='with --test-regex: the validation groups of every fold')
    parser.add_argument('--test-regex', action='append', default=[],
                        help='one per fold: the groups that fold tests on (held out from '
                             'its training)')
    parser.add_argument('--n-folds', type=int, default=None,
                        help='without --test-regex: cross-validation folds, K >= 2, with '
                             'a fixed val set of a sixth of the groups (K-1:K/5:1); 1 is '
                             f'one 4:1:1 split (default {RANDOM_SPLIT_FOLDS})')
    parser.add_argument('--seed', type=int, default=None,
                        help='without --test-regex: seed of the random split (default '
                             f'{RANDOM_SPLIT_SEED})')
    add_image_arguments(parser, tile=256)


def add_image_arguments(parser, tile):
    """The intensity stretch and the tiling options (shared with presets, whose folds
    are fixed: the split options are :func:`add_arguments`'s)."""
    parser.add_argument('--percentiles', type=float, nargs=2, action=PercentilesAction,
                        default=list(STRETCH_PERCENTILES), metavar=('LOW', 'HIGH'),
                        help='the images --stretch names are stretched between these '
                             'percentiles, 0 <= LOW < HIGH <= 100 (default %(default)s)')
    parser.add_argument('--stretch', choices=STRETCH_MODES, default='deep',
                        help='which images are stretched between the --percentiles: '
                             'deep (more than 8 bits; 8-bit images are kept as they are) '
                             'or all (each image on its own, 8-bit ones too; for sets '
                             'mixing bit depths or exposures) (default %(default)s)')
    add_scale_arguments(parser, mpp_from_images=False)
    add_common_arguments(parser, tile=tile, overlap=0, n_folds=None)


class PercentilesAction(argparse.Action):
    """Store ``--percentiles LOW HIGH`` once :func:`check_percentiles` accepts them, so
    that a reversed or out-of-range pair is an error of the option."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            setattr(namespace, self.dest, list(check_percentiles(*values)))
        except ValueError as err:
            raise argparse.ArgumentError(self, str(err)) from None


def _channels(text):
    try:
        return parse_channels(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def find_pairs(images_dir, masks_dir, image_suffix=None):
    """``[(relative image path, image path, mask path)]`` sorted by relative path.

    Suffixes match in any case. A folder that lies inside the other is left out of the
    other's search, and a file taken as an image is never a label image.

    Raises:
        ValueError: a missing folder or no image, an image without its label image, a
            label image without its image, or two candidates for one stem.
    """
    images_dir, masks_dir = Path(images_dir), Path(masks_dir)
    for name, folder in (('--images', images_dir), ('--masks', masks_dir)):
        if not folder.is_dir():
            raise ValueError(f'{name} {folder}: no such directory')
    by_stem, left_out = _pick_images(
        images_dir, _files(images_dir, IMAGE_SUFFIXES, skip=masks_dir), image_suffix)
    taken = {path.resolve() for path in by_stem.values()}
    labels = {}
    for path in _files(masks_dir, MASK_SUFFIXES, skip=images_dir):
        if path.resolve() not in taken:
            labels.setdefault(path.relative_to(masks_dir).with_suffix(''), []).append(path)
    pairs = []
    for stem, image in by_stem.items():
        found = labels.pop(stem, [])
        if not found:
            raise ValueError(f'{image}: no label image; expected '
                             f'{masks_dir / stem.parent / stem.name}'
                             f'{{{",".join(MASK_SUFFIXES)}}} (any case)')
        if len(found) > 1:
            raise ValueError(f'{image}: two label images, {found[0]} and {found[1]}')
        pairs.append((image.relative_to(images_dir).as_posix(), image, found[0]))
    _check_unpaired(labels, set(left_out), images_dir)
    return pairs


def _files(folder, suffixes, skip):
    """The files below ``folder`` whose suffix (any case) is one of ``suffixes``, sorted,
    leaving out the folder ``skip`` when it lies inside ``folder``."""
    root, inner = folder.resolve(), skip.resolve()
    nested = inner != root and inner.is_relative_to(root)
    return [path for path in sorted(folder.rglob('*'))
            if path.suffix.lower() in suffixes and path.is_file()
            and not (nested and path.resolve().is_relative_to(inner))]


def _pick_images(images_dir, paths, image_suffix):
    """``({stem: image}, [stems of images of another suffix than image_suffix])``.

    Raises:
        ValueError: no image, or two images for one stem.
    """
    by_stem, left_out = {}, []
    for path in paths:
        stem = path.relative_to(images_dir).with_suffix('')
        if image_suffix is not None and path.suffix.lower() != image_suffix.lower():
            left_out.append(stem)
            continue
        if stem in by_stem:
            raise ValueError(f'two images for {stem}: {by_stem[stem]} and {path}; pick '
                             'one with --image-suffix')
        by_stem[stem] = path
    if not by_stem:
        raise ValueError(f'--images {images_dir}: no image file ({", ".join(IMAGE_SUFFIXES)})'
                         + (f' with suffix {image_suffix}' if image_suffix else ''))
    return by_stem, left_out


def _check_unpaired(labels, left_out, images_dir, what='label image'):
    """Raise for label (or type) images (``{stem: [paths]}`` not paired) whose stem has
    no image (an image left out by ``--image-suffix`` is not missing)."""
    unpaired = [path for stem, paths in labels.items() if stem not in left_out
                for path in paths]
    if unpaired:
        listed = ', '.join(map(str, unpaired[:5])) + (', ...' if len(unpaired) > 5 else '')
        raise ValueError(f'{len(unpaired)} {what}(s) without an image: {listed}; '
                         f'expected an image of the same relative path and stem below '
                         f'--images {images_dir} ({", ".join(IMAGE_SUFFIXES)})')


def find_type_images(images_dir, types_dir, sources, masks_dir):
    """``{source: type image}`` for the images ``sources`` (paths relative to
    ``images_dir``): the file of the same relative path and stem below ``types_dir``, as
    :func:`find_pairs` pairs label images.

    Raises:
        ValueError: a missing folder or the ``--masks`` folder, an image without its
            type image, two candidates for one stem, a type image without an image.
    """
    images_dir, types_dir = Path(images_dir), Path(types_dir)
    if not types_dir.is_dir():
        raise ValueError(f'--type-masks {types_dir}: no such directory')
    if types_dir.resolve() == Path(masks_dir).resolve():
        raise ValueError(f'--type-masks {types_dir} is the --masks folder; put the type '
                         'images in a folder of their own (same relative paths and stems '
                         'as the images)')
    found = {}
    for path in _files(types_dir, MASK_SUFFIXES, skip=images_dir):
        found.setdefault(path.relative_to(types_dir).with_suffix(''), []).append(path)
    type_images = {}
    for source in sources:
        stem = Path(source).with_suffix('')
        paths = found.pop(stem, [])
        if not paths:
            raise ValueError(f'{images_dir / source}: no type image; expected '
                             f'{types_dir / stem}{{{",".join(MASK_SUFFIXES)}}} (any case)')
        if len(paths) > 1:
            raise ValueError(f'{images_dir / source}: two type images, {paths[0]} and '
                             f'{paths[1]}')
        type_images[source] = paths[0]
    stems = {path.relative_to(images_dir).with_suffix('')
             for path in _files(images_dir, IMAGE_SUFFIXES, skip=types_dir)}
    _check_unpaired(found, stems, images_dir, what='type image')
    return type_images


def class_names(args):
    """The categories: ``--class-names`` with ``--type-masks``, else the one ``--class``.

    Raises:
        ValueError: one of ``--type-masks`` and ``--class-names`` without the other,
            ``--class`` with them, or names that are empty or repeated.
    """
    if args.type_masks is None:
        if args.class_names is not None:
            raise ValueError('--class-names names the types of --type-masks; give '
                             '--type-masks DIR too, or --class NAME for one class')
        return [args.class_name or DEFAULT_CLASS]
    if args.class_names is None:
        raise ValueError('--type-masks needs --class-names A,B,... (the class of type 1, '
                         '2, ... in order)')
    if args.class_name is not None:
        raise ValueError('--class names the one class of a set without types; with '
                         '--type-masks the classes are --class-names')
    names = [name.strip() for name in args.class_names.split(',')]
    if not all(names) or len(set(names)) != len(names):
        raise ValueError(f'--class-names {args.class_names!r}: expected distinct, '
                         'non-empty names separated by commas')
    return names


def _check_same_size(path, array, image_path, pixels, what):
    """ValueError naming both files unless ``array`` has the size of ``pixels``."""
    if array.shape[:2] != pixels.shape[:2]:
        raise ValueError(f'{what} {path} is {array.shape[1]}x{array.shape[0]} but its '
                         f'image {image_path} is {pixels.shape[1]}x{pixels.shape[0]} '
                         '(width x height); expected the same size')


def load_pair(source, image_path, mask_path, group, channels=None,
              percentiles=STRETCH_PERCENTILES, stretch='deep', mpp=None, type_path=None,
              n_types=1):
    """``(SourceImage, n_ids_in_pieces, n_mixed)`` of an image and its label image.

    With ``type_path``, a type image of ``n_types`` types, each instance's label is its
    type (:func:`~cellio.instance_masks.instance_types`); an instance without a
    typed pixel gets label 1 and ``iscrowd`` 1 (an ignored annotation), and
    ``n_mixed`` counts the typed instances whose type holds less than
    :data:`MIXED_SHARE` of their typed pixels (0 without types).

    Raises:
        ValueError: a size differs from the image's (naming both files), an unreadable
            file, a label image that looks binary or semantic
            (:func:`check_instance_ids`), a type above ``n_types``.
    """
    pixels = read_intensity_image(image_path, percentiles, stretch)
    ids = read_label_image(mask_path, channels)
    _check_same_size(mask_path, ids, image_path, pixels, 'label image')
    in_pieces = check_instance_ids(mask_path, ids)
    _, boxes, centres, _ = instances(ids)
    labels, extra, mixed = [1] * len(boxes), {}, 0
    if type_path is not None:
        types = read_type_image(type_path, n_types)
        _check_same_size(type_path, types, image_path, pixels, 'type image')
        kinds, share = instance_types(ids, types, n_types)
        labels = np.maximum(kinds, 1)
        extra = dict(iscrowd=(kinds == 0).astype(np.int64))
        mixed = int(np.count_nonzero((kinds > 0) & (share < MIXED_SHARE)))
    image = SourceImage(source=source, group=group,
                        reader=ArrayReader(pixels, name=str(image_path)),
                        width=pixels.shape[1], height=pixels.shape[0], labels=labels,
                        points=centres, boxes=boxes, extra=extra, mpp=mpp)
    return image, in_pieces, mixed


def make_splits(args, groups):
    """Explicit held-out folds with ``--test-regex``, else a random split by group:
    4:1:1, or ``--n-folds`` folds with the ratios of :func:`fold_ratios`.

    Raises:
        ValueError: ``--n-folds`` or ``--seed`` with ``--test-regex`` (the patterns are
            the folds, nothing is drawn), or a regex without its partner.
    """
    if args.test_regex:
        if args.val_regex is None:
            raise ValueError('--test-regex needs --val-regex (the validation groups)')
        given = [option for option, value in (('--n-folds', args.n_folds),
                                              ('--seed', args.seed)) if value is not None]
        if given:
            raise ValueError(f'{" and ".join(given)}: only for the random split; with '
                             '--test-regex each pattern is one fold and nothing is drawn')
        return split_by_patterns(groups, args.val_regex, args.test_regex)
    if args.val_regex is not None:
        raise ValueError('--val-regex needs --test-regex (one per fold)')
    n_folds = RANDOM_SPLIT_FOLDS if args.n_folds is None else args.n_folds
    return split_groups(groups, ratios=fold_ratios(n_folds),
                        seed=RANDOM_SPLIT_SEED if args.seed is None else args.seed,
                        n_folds=n_folds)


def dataset_scale(args, pairs):
    """The one factor every image is resampled by
    (:func:`~data_prep.scaling.image_scale`: the images' ``--mpp``, if any, for
    ``--target-mpp``; ``--nucleus-size`` measures every label image first)."""
    measured = None
    if args.nucleus_size is not None:
        sides = [box_sides(instances(read_label_image(mask, args.rgb_ids))[1])
                 for _, _, mask, _ in pairs]
        measured = nucleus_scale(np.concatenate(sides), args.nucleus_size)
    return image_scale(args, args.mpp, pairs[0][1], measured)


def count_instances(counts, image, in_pieces, mixed, classes):
    """Add one image's instances to the raw ``counts`` (with types also per class,
    ``unclassified`` and ``mixed``)."""
    n = len(image.labels)
    counts['instances'] += n
    counts['empty_masks'] += n == 0
    counts['ids_in_pieces'] += in_pieces
    if 'per_class' in counts:
        ignored = np.asarray(image.extra['iscrowd'], dtype=bool)
        counts['unclassified'] += int(ignored.sum())
        counts['mixed'] += mixed
        for label in image.labels[~ignored]:
            counts['per_class'][classes[label - 1]] += 1


def print_report(counts, sizes):
    """Print the raw counts, the classes (with types) and the nuclei's sizes."""
    print('raw: ' + ', '.join(f'{k}={v}' for k, v in counts.items() if k != 'per_class'))
    if 'per_class' in counts:
        print('classes: ' + ', '.join(f'{name}={n}' for name, n in
                                      counts['per_class'].items()))
    print(size_line(sizes))
    if sizes['warning']:
        print(f'warning: {sizes["warning"]}')


def convert(args, pairs, protect, classes=None, type_images=None):
    """Load every ``(source, image path, mask path, group)``, resample it by the
    options' factor (:func:`dataset_scale`) and write the dataset.

    Args:
        classes: the category names, type ``k`` the ``k``-th (default: ``--class``).
        type_images: ``{source: type image}`` (``--type-masks``), or ``None``.

    Returns:
        the writer's summary with ``raw`` (the counts) and ``sizes``
        (:func:`~data_prep.scaling.size_report`).
    """
    classes = classes or [args.class_name or DEFAULT_CLASS]
    splits = make_splits(args, [group for *_, group in pairs])
    scale = dataset_scale(args, pairs)
    counts = dict(images=len(pairs), instances=0, empty_masks=0, ids_in_pieces=0)
    if type_images is not None:
        counts.update(per_class=dict.fromkeys(classes, 0), unclassified=0, mixed=0)
    sides = [np.zeros(0)]

    def load_all():
        for source, image_path, mask_path, group in pairs:
            image, in_pieces, mixed = load_pair(
                source, image_path, mask_path, group, args.rgb_ids, args.percentiles,
                args.stretch, mpp=args.mpp, n_types=len(classes),
                type_path=None if type_images is None else type_images[source])
            count_instances(counts, image, in_pieces, mixed, classes)
            image = rescale(image, scale)
            sides.append(box_sides(image.boxes))
            yield image

    summary = write_dataset(
        args.out, classes, load_all(), splits, tile=args.tile or None,
        overlap=args.overlap, drop_empty_tiles=args.drop_empty_tiles,
        overwrite=args.overwrite, src=protect, total=len(pairs), progress=args.progress,
        options=dict(command_options(args), applied_scale=scale))
    summary.update(raw=counts, sizes=size_report(np.concatenate(sides), [scale]))
    print_report(counts, summary['sizes'])
    return summary


def prepare(args):
    classes = class_names(args)
    pattern = compile_group_regex(args.group_regex)
    pairs = [(source, image, mask, group_of(source, pattern))
             for source, image, mask in find_pairs(args.images, args.masks,
                                                   args.image_suffix)]
    protect = [args.images, args.masks]
    type_images = None
    if args.type_masks is not None:
        type_images = find_type_images(args.images, args.type_masks,
                                       [source for source, *_ in pairs], args.masks)
        protect.append(args.type_masks)
    return convert(args, pairs, protect, classes, type_images)
