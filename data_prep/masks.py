"""Instance label images -> tiled COCO files (``prepare.py masks``).

Usage::

    python data_prep/prepare.py masks --images IMAGES --masks MASKS --out OUT \\
        [--rgb-ids GB] [--class nucleus] [--group-regex REGEX] \\
        [--val-regex REGEX --test-regex REGEX [--test-regex REGEX ...]] [--tile 256] \\
        [--percentiles 0.1 99.9] [--stretch {deep,all}]

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

Defined outcomes:

* an instance cut by a tile edge belongs to the tile that holds its centre point, with
  its box clipped to the tile (as every dataset here; the next tile shows it unlabeled);
* touching instances keep their own ids; an id in several 8-connected pieces is one
  instance (counted as ``ids_in_pieces``), but a label image whose ids form two pieces
  per id or more (its only id in two pieces, say) is an error: a binary or semantic mask;
* an empty label image gives an image without cells (its tiles are unlabeled data,
  unless ``--drop-empty-tiles``);
* a label image whose size differs from its image, an image without a label image, a
  label image without an image, two candidate files for one stem: errors naming the
  files.

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

from data_prep.splits import (compile_group_regex, fold_ratios, group_of,
                              split_by_patterns, split_groups)
from data_prep.writer import (SourceImage, add_common_arguments, command_options,
                              write_dataset)
from cellio.images import ArrayReader
from cellio.instance_masks import (STRETCH_MODES, STRETCH_PERCENTILES,
                                   check_instance_ids, check_percentiles, instances,
                                   parse_channels, read_intensity_image,
                                   read_label_image)

IMAGE_SUFFIXES = ('.png', '.tif', '.tiff', '.jpg', '.jpeg', '.bmp')
MASK_SUFFIXES = ('.png', '.tif', '.tiff')
#: ``--seed`` and ``--n-folds`` of the random split when not given (4:1:1).
RANDOM_SPLIT_SEED = 0
RANDOM_SPLIT_FOLDS = 1


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
    parser.add_argument('--class', dest='class_name', default='nucleus',
                        help='name of the one cell class (default nucleus)')
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


def _check_unpaired(labels, left_out, images_dir):
    """Raise for label images (``{stem: [paths]}`` not paired) whose stem has no image
    (an image left out by ``--image-suffix`` is not missing)."""
    unpaired = [path for stem, paths in labels.items() if stem not in left_out
                for path in paths]
    if unpaired:
        listed = ', '.join(map(str, unpaired[:5])) + (', ...' if len(unpaired) > 5 else '')
        raise ValueError(f'{len(unpaired)} label image(s) without an image: {listed}; '
                         f'expected an image of the same relative path and stem below '
                         f'--images {images_dir} ({", ".join(IMAGE_SUFFIXES)})')


def load_pair(source, image_path, mask_path, group, channels=None,
              percentiles=STRETCH_PERCENTILES, stretch='deep'):
    """``(SourceImage, n_instances, n_ids_in_pieces)`` of an image and its label image.

    Raises:
        ValueError: the two sizes differ (naming both files), an unreadable file, or a
            label image that looks binary or semantic (:func:`check_instance_ids`).
    """
    pixels = read_intensity_image(image_path, percentiles, stretch)
    ids = read_label_image(mask_path, channels)
    if ids.shape != pixels.shape[:2]:
        raise ValueError(f'label image {mask_path} is {ids.shape[1]}x{ids.shape[0]} but '
                         f'its image {image_path} is {pixels.shape[1]}x{pixels.shape[0]} '
                         '(width x height); expected the same size')
    in_pieces = check_instance_ids(mask_path, ids)
    _, boxes, centres, _ = instances(ids)
    image = SourceImage(source=source, group=group,
                        reader=ArrayReader(pixels, name=str(image_path)),
                        width=pixels.shape[1], height=pixels.shape[0],
                        labels=[1] * len(boxes), points=centres, boxes=boxes)
    return image, len(boxes), in_pieces


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


def convert(args, pairs, protect):
    """Load every ``(source, image path, mask path, group)`` and write the dataset."""
    splits = make_splits(args, [group for *_, group in pairs])
    counts = dict(images=len(pairs), instances=0, empty_masks=0, ids_in_pieces=0)

    def load_all():
        for source, image_path, mask_path, group in pairs:
            image, n, in_pieces = load_pair(source, image_path, mask_path, group,
                                            args.rgb_ids, args.percentiles,
                                            args.stretch)
            counts['instances'] += n
            counts['empty_masks'] += n == 0
            counts['ids_in_pieces'] += in_pieces
            yield image

    summary = write_dataset(
        args.out, [args.class_name], load_all(), splits, tile=args.tile or None,
        overlap=args.overlap, drop_empty_tiles=args.drop_empty_tiles,
        overwrite=args.overwrite, src=protect, total=len(pairs), progress=args.progress,
        options=command_options(args))
    summary['raw'] = counts
    print('raw: ' + ', '.join(f'{k}={v}' for k, v in counts.items()))
    return summary


def prepare(args):
    pattern = compile_group_regex(args.group_regex)
    pairs = [(source, image, mask, group_of(source, pattern))
             for source, image, mask in find_pairs(args.images, args.masks,
                                                   args.image_suffix)]
    return convert(args, pairs, protect=[args.images, args.masks])
