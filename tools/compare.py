"""The paper's comparison tables: mean ± std per class, paired t-tests, BH correction.

Usage::

    python tools/compare.py METHOD [METHOD ...] --names NAME [NAME ...] --ref NAME
        [--per-image] [--split test|val] [--stat avg|pooled] [--untested NAME ...]
        [--format md|latex] [--p-values] [--digits 3]

Input convention. Each METHOD is one path or quoted glob pattern matching the work dirs
of one method (``'work_dirs/pu_mitos_fold*'``); each work dir holds
``cell_metrics/<split>_per_image.json``, written by ``CellDetMetric`` when
``tools/test.py`` evaluates it (a path to such a JSON file works too). ``--names`` gives
the methods' names in the same order, ``--ref`` the one the others are tested against
(the proposed method in the paper).

* Folds or runs (default; MITOS-ATYPIA-14, CRCHisto, repeated runs): one work dir per
  fold. The statistic of a fold is its average recall / precision / F1 (mean over test
  images; ``--stat pooled`` uses the pooled values instead). Mean and standard deviation
  (ddof=1) are taken over folds; the t-test pairs the folds of two methods in sorted
  path order (natural sort: ``fold2`` before ``fold10``), which must evaluate the same
  test images (checked).
* ``--per-image`` (single split: TUPAC, NuCLS): one work dir per method; mean and std are
  taken over test images and the t-test pairs images (by image id and file name),
  leaving out images where the value is undefined for either method.

Every method except ``--ref`` and the ``--untested`` ones (e.g. the upper bound) is
compared with ``--ref`` by a two-sided paired Student's t-test
(``scipy.stats.ttest_rel``) for each class and each of recall, precision and F1; all
p-values of the table form one family for the Benjamini-Hochberg correction. The p
column shows ``**`` (adjusted p < 0.01), ``*`` (< 0.05) or ``n.s.``; ``-`` for methods not
tested. The best mean of each column among the tested methods and the reference is
bold.

A second table, its own family of tests, separates ranking from calibration: F1 at the
test threshold, F1 at the threshold the run's validation selected (``pu_score_thr`` of
the ``val_per_image.json`` beside the test dump, computed from the same test pass; ``-``
for runs without one, counted in the note) and AP over every detection.

The tables are built by :mod:`studies.comparison` and written by
:mod:`studies.comparison_format` (shared with ``tools/repeat.py`` and
``tools/demo.py``); this script is their command line.
"""
import argparse
import sys
from pathlib import Path

from cellio.cli import report_user_errors

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's studies/

from studies.comparison import compare, load_folds, load_images  # noqa: E402
from studies.comparison_format import format_comparison  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Print the paper's comparison tables (mean ± std, paired t-test "
        'with Benjamini-Hochberg correction)',
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument('methods', nargs='+', metavar='METHOD',
                        help='work dir(s) of one method: a path or a quoted glob')
    parser.add_argument('--names', nargs='+', required=True,
                        help='method names, one per METHOD')
    parser.add_argument('--ref', required=True, help='name of the reference method')
    parser.add_argument('--untested', nargs='+', default=[], metavar='NAME',
                        help='methods shown but not tested (e.g. the upper bound)')
    parser.add_argument('--per-image', action='store_true',
                        help='statistics over test images of one work dir per method')
    parser.add_argument('--split', default='test', choices=['test', 'val'],
                        help='which dump to read (default: test)')
    parser.add_argument('--stat', default='avg', choices=['avg', 'pooled'],
                        help='per-fold statistic: mean over images (default, the '
                        "paper's) or pooled counts")
    parser.add_argument('--format', default='md', choices=['md', 'latex'])
    parser.add_argument('--p-values', action='store_true',
                        help='print adjusted p-values next to the stars')
    parser.add_argument('--digits', type=int, default=3)
    args = parser.parse_args(argv)
    if len(args.names) != len(args.methods):
        parser.error(f'{len(args.methods)} METHOD arguments but {len(args.names)} '
                     '--names')
    if len(set(args.names)) != len(args.names):
        parser.error(f'--names must be distinct, got {args.names}')
    if args.per_image and args.stat != 'avg':
        parser.error('--stat applies to folds; --per-image uses per-image values')
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.per_image:
        methods = [load_images(n, p, args.split) for n, p in zip(args.names, args.methods)]
    else:
        methods = [load_folds(n, p, args.split, args.stat)
                   for n, p in zip(args.names, args.methods)]
    comparison = compare(methods, args.ref, args.untested, args.per_image)
    text = format_comparison(comparison, args.stat, args.format, args.digits,
                             args.p_values)
    sys.stdout.write(f'{text}\n')
    return text


if __name__ == '__main__':
    sys.exit(report_user_errors(main))
