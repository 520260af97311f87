"""Instance label images -> tiled COCO files (``prepare.py masks``).

Usage::

    python data_prep/prepare.py masks --images IMAGES --masks MASKS --out OUT \\
        [--rgb-ids GB] [--class nucleus] [--group-regex REGEX] \\
        [--val-regex REGEX --test-regex REGEX [--test-regex REGEX ...]] [--tile 256]

Every image below ``--images`` (PNG, TIFF, JPEG, BMP; searched recursively) is paired
with the label image of the same relative path and stem below ``--masks`` (PNG or TIFF;
``--image-suffix`` picks one image where a stem has several). A label image holds one
integer id per instance and 0 for background: 8/16/32-bit grey, a palette PNG, or ids
packed in RGB(A) channels (``--rgb-ids GB``: ``id = G * 256 + B``, alpha 0 is
background). Each instance becomes a box (all its pixels) and a centre point (its mean
pixel), the COCO layout of docs/design.md. Intensity images of more than 8 bits
(fluorescence) are stretched between the ``--percentiles``.

Defined outcomes:

* an instance cut by a tile edge belongs to the tile that holds its centre point, with
  its box clipped to the tile (as every dataset here; the next tile shows it unlabeled);
* touching instances keep their own ids; an id in several pieces is one instance;
* an empty label image gives an image without cells (its tiles are unlabeled data,
  unless ``--drop-empty-tiles``);
* a label image whose size differs from its image, an image without a label image, two
  candidate files for one stem: errors naming the files.

Splits: 4:1:1 by group (``--group-regex``: the first capture group, else the whole
match, searched in the image's path relative to ``--images``; default: each image its
own group) with ``--n-folds`` and ``--seed``; or explicit held-out folds:
``--test-regex`` once per fold (its test groups) and ``--val-regex`` (the validation
groups of every fold, except those a fold tests on). The patterns fix those folds, so
``--n-folds`` and ``--seed`` are refused with them.
"""
import argparse
from pathlib import Path

from data_prep.splits import (compile_group_regex, group_of, split_by_patterns,
                              split_groups)
from data_prep.writer import SourceImage, add_common_arguments, write_dataset
from mmdet_pu.io.images import ArrayReader
from mmdet_pu.io.instance_masks import (STRETCH_PERCENTILES, check_percentiles,
                                        instances, parse_channels, read_intensity_image,
                                        read_label_image)

IMAGE_SUFFIXES = ('.png', '.tif', '.tiff', '.jpg', '.jpeg', '.bmp')
MASK_SUFFIXES = ('.png', '.tif', '.tiff')
#: ``--seed`` and ``--n-folds`` of the 4:1:1 split when not given.
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
                        help='without --test-regex: cross-validation folds of the 4:1:1 '
                             f'split, with a fixed val set (default {RANDOM_SPLIT_FOLDS})')
    parser.add_argument('--seed', type=int, default=None,
                        help='without --test-regex: seed of the 4:1:1 split (default '
                             f'{RANDOM_SPLIT_SEED})')
    add_image_arguments(parser, tile=256)


def add_image_arguments(parser, tile):
    """The intensity stretch and the tiling options (shared with presets, whose folds
    are fixed: the split options are :func:`add_arguments`'s)."""
    parser.add_argument('--percentiles', type=float, nargs=2, action=PercentilesAction,
                        default=list(STRETCH_PERCENTILES), metavar=('LOW', 'HIGH'),
                        help='images of more than 8 bits are stretched between these '
                             'percentiles, 0 <= LOW < HIGH <= 100 (default %(default)s)')
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

    Raises:
        ValueError: an image without its label image, or two candidates for one stem.
    """
    images_dir, masks_dir = Path(images_dir), Path(masks_dir)
    for name, folder in (('--images', images_dir), ('--masks', masks_dir)):
        if not folder.is_dir():
            raise ValueError(f'{name} {folder}: no such directory')
    by_stem = {}
    for path in sorted(images_dir.rglob('*')):
        if path.suffix.lower() not in IMAGE_SUFFIXES or not path.is_file():
            continue
        if image_suffix is not None and path.suffix.lower() != image_suffix.lower():
            continue
        stem = path.relative_to(images_dir).with_suffix('')
        if stem in by_stem:
            raise ValueError(f'two images for {stem}: {by_stem[stem]} and {path}; pick '
                             'one with --image-suffix')
        by_stem[stem] = path
    if not by_stem:
        raise ValueError(f'--images {images_dir}: no image file ({", ".join(IMAGE_SUFFIXES)})'
                         + (f' with suffix {image_suffix}' if image_suffix else ''))
    pairs = []
    for stem, image in by_stem.items():
        candidates = [masks_dir / stem.parent / (stem.name + suffix)
                      for suffix in MASK_SUFFIXES]
        found = [path for path in candidates if path.is_file()]
        if not found:
            raise ValueError(f'{image}: no label image; expected '
                             f'{masks_dir / stem.parent / stem.name}'
                             f'{{{",".join(MASK_SUFFIXES)}}}')
        if len(found) > 1:
            raise ValueError(f'{image}: two label images, {found[0]} and {found[1]}')
        pairs.append((image.relative_to(images_dir).as_posix(), image, found[0]))
    return pairs


def load_pair(source, image_path, mask_path, group, channels=None,
              percentiles=STRETCH_PERCENTILES):
    """``(SourceImage, n_instances)`` of an image and its label image.

    Raises:
        ValueError: the two sizes differ (naming both files), or an unreadable file.
    """
    pixels = read_intensity_image(image_path, percentiles)
    ids = read_label_image(mask_path, channels)
    if ids.shape != pixels.shape[:2]:
        raise ValueError(f'label image {mask_path} is {ids.shape[1]}x{ids.shape[0]} but '
                         f'its image {image_path} is {pixels.shape[1]}x{pixels.shape[0]} '
                         '(width x height); expected the same size')
    _, boxes, centres, _ = instances(ids)
    image = SourceImage(source=source, group=group,
                        reader=ArrayReader(pixels, name=str(image_path)),
                        width=pixels.shape[1], height=pixels.shape[0],
                        labels=[1] * len(boxes), points=centres, boxes=boxes)
    return image, len(boxes)


def make_splits(args, groups):
    """Explicit held-out folds with ``--test-regex``, else 4:1:1 by group.

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
            raise ValueError(f'{" and ".join(given)}: only for the 4:1:1 split; with '
                             '--test-regex each pattern is one fold and nothing is drawn')
        return split_by_patterns(groups, args.val_regex, args.test_regex)
    if args.val_regex is not None:
        raise ValueError('--val-regex needs --test-regex (one per fold)')
    return split_groups(
        groups, ratios=(4, 1, 1),
        seed=RANDOM_SPLIT_SEED if args.seed is None else args.seed,
        n_folds=RANDOM_SPLIT_FOLDS if args.n_folds is None else args.n_folds)


def convert(args, pairs, protect):
    """Load every ``(source, image path, mask path, group)`` and write the dataset."""
    splits = make_splits(args, [group for *_, group in pairs])
    counts = dict(images=len(pairs), instances=0, empty_masks=0)

    def load_all():
        for source, image_path, mask_path, group in pairs:
            image, n = load_pair(source, image_path, mask_path, group, args.rgb_ids,
                                 args.percentiles)
            counts['instances'] += n
            counts['empty_masks'] += n == 0
            yield image

    summary = write_dataset(
        args.out, [args.class_name], load_all(), splits, tile=args.tile or None,
        overlap=args.overlap, drop_empty_tiles=args.drop_empty_tiles,
        overwrite=args.overwrite, src=protect, total=len(pairs), progress=args.progress)
    summary['raw'] = counts
    print('raw: ' + ', '.join(f'{k}={v}' for k, v in counts.items()))
    return summary


def prepare(args):
    pattern = compile_group_regex(args.group_regex)
    pairs = [(source, image, mask, group_of(source, pattern))
             for source, image, mask in find_pairs(args.images, args.masks,
                                                   args.image_suffix)]
    return convert(args, pairs, protect=[args.images, args.masks])
