"""mnfinder's real fluorescence nuclei -> tiled COCO files with held-out-set folds.

The development set of real nuclei (docs/datasets.md, "mnfinder"): 49 images (DAPI,
Hoechst or H2B-FP; RPE-1, U2OS, HeLa, HFF, MCC13 cells; widefield, spinning disk and
confocal, 20x and 40x; 512 to 1024 px) with 3,203 instance-annotated nuclei, shipped in
the MIT-licensed wheel ``mnfinder==1.2.3``::

    pip download --no-deps mnfinder==1.2.3 -d raw && unzip raw/mnfinder-1.2.3-*.whl -d raw
    python data_prep/prepare.py mnfinder --src raw --out data/mnfinder

Raw layout (``--src``: the unzipped wheel, or its ``mnfinder`` folder)::

    mnfinder/{training,validation,test}-data/<set>/images/<stem>.png
    mnfinder/{training,validation,test}-data/<set>/nucleus_masks/<stem>.png

The label images pack the instance id in green and blue (``id = G * 256 + B`` where
alpha > 0). The images are the sets' grey PNGs, 8 bits (RPE-1, the 40x set) or 16 bits
(U2OS); each is stretched between its own ``--percentiles`` (``--stretch all``, the
default here), so that the nuclei of the 8-bit sets are as bright as the U2OS ones
(``--stretch deep`` keeps the 8-bit images as they are). Each image's group is
``<set>/<training|validation|test>``.

Folds hold out whole sets (:data:`FOLDS`), so a fold's test images come from a cell line
and microscope its training never saw: fold 0 tests on the U2OS widefield set, fold 1 on
the mixed 40x set (HeLa, HFF, MCC13, U2OS, RPE-1 on spinning-disk and confocal
microscopes), fold 2 on the five RPE-1 sets. Every fold validates on the mnfinder
validation images of the sets it trains on. Training tiles are 256 px (``--tile``).
"""
from pathlib import Path

from data_prep.masks import add_image_arguments, convert

CLASS_NAME = 'nucleus'
SPLIT_FOLDERS = ('training-data', 'validation-data', 'test-data')
#: Test groups of each fold (regular expressions on ``<set>/<split>``).
FOLDS = (r'^2022-10-14_U2OS/', r'^2023-05-31_misc/', r'_RPE1/')
#: Validation groups: the mnfinder validation images of the sets a fold trains on.
VAL_PATTERN = r'/validation$'
ID_CHANNELS = 'GB'


def add_arguments(parser):
    """Options of ``prepare.py mnfinder``: the layout, ids and folds are fixed, so it
    takes no ``--n-folds`` / ``--seed`` (nothing is drawn)."""
    add_image_arguments(parser, tile=256)
    parser.set_defaults(stretch='all', rgb_ids=ID_CHANNELS, class_name=CLASS_NAME,
                        group_regex=None, val_regex=VAL_PATTERN, test_regex=list(FOLDS),
                        n_folds=None, seed=None)


def package_root(src):
    """The ``mnfinder`` folder holding the ``*-data`` folders: ``src`` or
    ``src/mnfinder``."""
    for root in (Path(src), Path(src) / 'mnfinder'):
        if any((root / name).is_dir() for name in SPLIT_FOLDERS):
            return root
    raise ValueError(f'--src {src}: no {"/".join(SPLIT_FOLDERS)} folder in it or in its '
                     'mnfinder/ folder; unzip mnfinder-1.2.3-py3-none-any.whl and give '
                     'the folder it was unzipped to')


def find_images(src):
    """``[(source, image path, label image path, group)]`` of every annotated image."""
    root = package_root(src)
    found = []
    for split_folder in SPLIT_FOLDERS:
        split = split_folder.split('-')[0]
        for image_dir in sorted((root / split_folder).glob('*/images')):
            set_name = image_dir.parent.name
            for image in sorted(image_dir.glob('*.png')):
                mask = image_dir.parent / 'nucleus_masks' / image.name
                if not mask.is_file():
                    raise ValueError(f'{image}: no label image {mask}')
                source = image.relative_to(root).as_posix()
                found.append((source, image, mask, f'{set_name}/{split}'))
    if not found:
        raise ValueError(f'{root}: no */images/*.png in {", ".join(SPLIT_FOLDERS)}')
    return found


def prepare(args):
    return convert(args, find_images(args.src), protect=[args.src])
