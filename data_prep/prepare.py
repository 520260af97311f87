"""Convert a raw cell-detection dataset to tiled COCO files (layout: docs/design.md).

Usage::

    python data_prep/prepare.py {mitos14,crchisto,tupac,nucls,mnfinder,synthetic,qupath} \\
        --src RAW_DIR --out OUT_DIR [dataset options]
    python data_prep/prepare.py masks --images DIR --masks DIR --out OUT_DIR [options]

``python data_prep/prepare.py <dataset> -h`` lists the options of one dataset. Each
dataset is a module ``data_prep/<dataset>.py`` with ``add_arguments(parser)`` and
``prepare(args) -> summary`` (contract in :mod:`data_prep.writer`); modules are imported
only when their dataset is chosen, so one broken converter does not block the others.
The output directory is written atomically; ``--src`` is only read. Errors in the input
(malformed raw files, missing paths, an existing ``--out``) are reported as
``prepare.py: error: <message>`` with exit status 2, without a traceback
(:func:`cellio.cli.report_user_errors`); :func:`main` itself raises them
(``ValueError`` / ``OSError``) for callers.
"""
import argparse
import importlib
import sys
from pathlib import Path

if __package__ in (None, ''):  # run as a script: make `data_prep` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from data_prep.writer import format_summary  # noqa: E402
from cellio.cli import report_user_errors  # noqa: E402

#: dataset name -> (module, one-line description)
DATASETS = {
    'mitos14': ('data_prep.mitos14', 'MITOS-ATYPIA-14 mitoses (binary, points)'),
    'crchisto': ('data_prep.crchisto', 'CRCHistoPhenotypes nuclei (binary, points)'),
    'tupac': ('data_prep.tupac', 'TUPAC16 auxiliary mitoses, cases 01-23 (binary, points)'),
    'nucls': ('data_prep.nucls', 'NuCLS tumor/lymphocyte/stromal (multi-class, boxes)'),
    'mnfinder': ('data_prep.mnfinder', 'mnfinder real fluorescence nuclei, folds hold out '
                                       'cell lines / microscopes (binary, masks)'),
    'masks': ('data_prep.masks', 'any images + instance label images (binary, masks; '
                                 '--images and --masks instead of --src)'),
    'synthetic': ('data_prep.synthetic', 'generated H&E-like images (no raw data)'),
    'qupath': ('data_prep.qupath', 'your own images/slides + QuPath GeoJSON or CSV points '
                                   '(partial annotations)'),
}


#: Converters that read their input from other options than ``--src``.
WITHOUT_SRC = ('masks', )


def _load(name):
    module_name = DATASETS[name][0]
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name == module_name:
            raise SystemExit(f'dataset {name!r}: converter {module_name} is not '
                             'installed in this checkout') from err
        raise


def build_parser(argv):
    """The parser; only the chosen dataset's module is imported for its options."""
    parser = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    subparsers = parser.add_subparsers(dest='dataset', required=True, metavar='dataset')
    chosen = next((a for a in argv if a in DATASETS), None)
    for name, (_, help_text) in DATASETS.items():
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        if name not in WITHOUT_SRC:
            sub.add_argument('--src', type=Path, required=name != 'synthetic',
                             help='raw dataset directory (only read)')
        sub.add_argument('--out', type=Path, required=True, help='output directory')
        sub.add_argument('--overwrite', action='store_true',
                         help='replace an existing output directory')
        sub.add_argument('--no-progress', dest='progress', action='store_false',
                         help='hide the progress bar')
        if name == chosen:
            _load(name).add_arguments(sub)
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if getattr(args, 'src', None) is not None and not args.src.is_dir():
        parser.error(f'--src {args.src}: no such directory')
    summary = _load(args.dataset).prepare(args)
    print(f'{args.dataset} written to {args.out}')
    print(format_summary(summary))
    return summary


if __name__ == '__main__':
    sys.exit(report_user_errors(main))
