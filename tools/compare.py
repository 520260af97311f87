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
"""
import argparse
import glob
import json
import os.path as osp
import re
import sys
from typing import Dict, List, NamedTuple, Optional

import numpy as np

from mmdet_pu.evaluation.statistics import (benjamini_hochberg, mean_std, paired_ttest,
                                            significance_stars)

RATES = ('recall', 'precision', 'f1')
RATE_TITLES = dict(recall='Recall', precision='Precision', f1='F1-score')


class Method(NamedTuple):
    """Per-unit values of one method.

    ``values[(class, rate)]`` is an array over ``units`` (folds or test images).
    """
    name: str
    sources: List[str]
    classes: List[str]
    units: List[object]
    values: Dict[tuple, np.ndarray]


def natural_key(text: str):
    return [int(part) if part.isdigit() else part for part in re.split(r'(\d+)', text)]


def resolve_reports(pattern: str, split: str) -> List[str]:
    """The per-image JSON files a METHOD argument points to, in natural order."""
    matches = sorted(glob.glob(pattern), key=natural_key) or (
        [pattern] if osp.exists(pattern) else [])
    if not matches:
        raise FileNotFoundError(f'{pattern!r} matches no work dir or file')
    reports = []
    for path in matches:
        report = path if path.endswith('.json') else osp.join(
            path, 'cell_metrics', f'{split}_per_image.json')
        if not osp.isfile(report):
            raise FileNotFoundError(
                f'{report} not found; run tools/test.py on {path} with CellDetMetric as '
                'the test evaluator first')
        reports.append(report)
    return reports


def load_report(path: str) -> dict:
    with open(path) as f:
        report = json.load(f)
    for field in ('classes', 'metrics', 'images'):
        if field not in report:
            raise ValueError(f'{path}: field {field!r} missing; expected a per-image '
                             'dump of CellDetMetric')
    return report


def metric(report: dict, name: str):
    """A summary value of a dump by its unprefixed name (``'cell0/avg_recall'``)."""
    head = f'{report["prefix"]}/' if report.get('prefix') else ''
    return report['metrics'][head + name]


def image_key(image: dict) -> tuple:
    """Identity of a test image across methods: COCO id and file name."""
    return image['img_id'], osp.basename(image['img_path'] or '')


def _as_float(values):
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def load_folds(name: str, pattern: str, split: str, stat: str = 'avg') -> Method:
    """One value per fold (work dir): the fold's average (or pooled) rates."""
    sources = resolve_reports(pattern, split)
    reports = [load_report(path) for path in sources]
    classes = reports[0]['classes']
    for path, report in zip(sources, reports):
        if report['classes'] != classes:
            raise ValueError(f'{path}: classes {report["classes"]} differ from '
                             f'{classes} of {sources[0]}')
    values = {(cls, rate): _as_float([metric(r, f'{cls}/{stat}_{rate}') for r in reports])
              for cls in classes for rate in RATES}
    units = [frozenset(image_key(image) for image in r['images']) for r in reports]
    return Method(name, sources, classes, units, values)


def load_images(name: str, pattern: str, split: str) -> Method:
    """One value per test image, from a single work dir."""
    sources = resolve_reports(pattern, split)
    if len(sources) != 1:
        raise ValueError(f'--per-image takes one work dir per method; {pattern!r} '
                         f'matches {len(sources)}')
    report = load_report(sources[0])
    classes = report['classes']
    units = [image_key(image) for image in report['images']]
    if len(set(units)) != len(units):
        raise ValueError(f'{sources[0]}: an image (id, file name) appears twice')
    values = {(cls, rate): _as_float([image[rate][c] for image in report['images']])
              for c, cls in enumerate(classes) for rate in RATES}
    return Method(name, sources, classes, units, values)


def pair_values(method: Method, ref: Method, cls: str, rate: str, per_image: bool):
    """The two value arrays of a paired test, unit by unit."""
    a, b = method.values[(cls, rate)], ref.values[(cls, rate)]
    if per_image:
        index = {unit: i for i, unit in enumerate(method.units)}
        missing = [unit for unit in ref.units if unit not in index]
        if missing:
            raise ValueError(f'{method.name} has no result for image {missing[0]} of '
                             f'{ref.name} ({method.sources[0]})')
        return a[[index[unit] for unit in ref.units]], b
    if len(method.units) != len(ref.units):
        raise ValueError(f'{method.name} has {len(method.units)} folds, {ref.name} '
                         f'{len(ref.units)}; the paired t-test needs the same folds')
    for i, (mine, theirs) in enumerate(zip(method.units, ref.units)):
        if mine != theirs:
            raise ValueError(f'fold {i}: {method.sources[i]} and {ref.sources[i]} '
                             'evaluate different test images; pair the folds in the '
                             'same order')
    return a, b


class Cell(NamedTuple):
    mean: float
    std: float
    p: Optional[float]  # BH-adjusted; None: not tested


def build_table(methods: List[Method], ref: str, untested=(), per_image=False):
    """``{(method, class, rate): Cell}`` and the number of tests in the BH family."""
    by_name = {m.name: m for m in methods}
    if ref not in by_name:
        raise ValueError(f'--ref {ref!r} is not one of --names {list(by_name)}')
    reference = by_name[ref]
    for m in methods:
        if m.classes != reference.classes:
            raise ValueError(f'{m.name} has classes {m.classes}, {ref} has '
                             f'{reference.classes}')
    tests, raw_p = [], []
    for m in methods:
        if m.name == ref or m.name in untested:
            continue
        for cls in reference.classes:
            for rate in RATES:
                tests.append((m.name, cls, rate))
                raw_p.append(paired_ttest(*pair_values(m, reference, cls, rate,
                                                       per_image))[1])
    adjusted = dict(zip(tests, benjamini_hochberg(raw_p)))
    table = {}
    for m in methods:
        for cls in reference.classes:
            for rate in RATES:
                mean, std = mean_std(m.values[(cls, rate)])
                table[(m.name, cls, rate)] = Cell(
                    mean, std, adjusted.get((m.name, cls, rate)))
    return table, len(tests)


def best_methods(table, methods, untested, cls, rate):
    """Names with the highest mean of a column (ties all bold), untested excluded."""
    means = {m.name: table[(m.name, cls, rate)].mean for m in methods
             if m.name not in untested}
    defined = [v for v in means.values() if not np.isnan(v)]
    if not defined:
        return set()
    top = max(defined)
    return {name for name, v in means.items() if v == top}


def _number(value, digits):
    return '-' if value is None or np.isnan(value) else f'{value:.{digits}f}'


def _p_text(cell: Cell, show_p: bool, digits: int) -> str:
    if cell.p is None:
        return '-'
    stars = significance_stars(cell.p)
    if show_p and not np.isnan(cell.p):
        return f'{cell.p:.{digits}f}{"" if stars == "n.s." else stars}'
    return stars or '-'


def table_rows(table, methods, untested, digits, show_p, bold):
    """Rows of text cells: ``[class, method, mean, std, p, ...]`` per method and class."""
    classes = methods[0].classes
    rows = []
    for cls in classes:
        best = {rate: best_methods(table, methods, untested, cls, rate) for rate in RATES}
        for m in methods:
            row = [cls, m.name]
            for rate in RATES:
                cell = table[(m.name, cls, rate)]
                mean, std = _number(cell.mean, digits), _number(cell.std, digits)
                if m.name in best[rate]:
                    mean, std = bold(mean), bold(std)
                row += [mean, std, _p_text(cell, show_p, digits)]
            rows.append(row)
    return rows


def format_markdown(table, methods, untested=(), digits=3, show_p=False) -> str:
    rows = table_rows(table, methods, untested, digits, show_p, lambda s: f'**{s}**')
    header = ['Class', 'Method']
    for rate in RATES:
        header += [f'{RATE_TITLES[rate]} mean', 'std', 'p']
    if len(methods[0].classes) == 1:
        header, rows = header[1:], [row[1:] for row in rows]
    lines = ['| ' + ' | '.join(header) + ' |',
             '|' + '|'.join(['---'] * len(header)) + '|']
    lines += ['| ' + ' | '.join(row) + ' |' for row in rows]
    return '\n'.join(lines)


def _latex_escape(text: str) -> str:
    return re.sub(r'([&%$#_{}])', r'\\\1', str(text))


def format_latex(table, methods, untested=(), digits=3, show_p=False) -> str:
    rows = table_rows(table, methods, untested, digits, show_p,
                      lambda s: f'\\textbf{{{s}}}')
    multi_class = len(methods[0].classes) > 1
    lead = ['Cell type', 'Method'] if multi_class else ['Method']
    columns = 'l' * len(lead) + ' ccc' * len(RATES)
    first = ' & '.join(f'\\multirow{{2}}{{*}}{{{t}}}' for t in lead)
    first += ''.join(f' & \\multicolumn{{3}}{{c}}{{{RATE_TITLES[r]}}}' for r in RATES)
    rules = ' '.join(f'\\cmidrule(lr){{{len(lead) + 3 * i + 1}-{len(lead) + 3 * i + 3}}}'
                     for i in range(len(RATES)))
    second = ' & ' * (len(lead) - 1) + ''.join(' & mean & std & $p$' for _ in RATES)
    lines = [f'\\begin{{tabular}}{{{columns}}}', '\\toprule', first + ' \\\\', rules,
             second + ' \\\\', '\\midrule']
    previous = None
    for row in rows:
        if multi_class and previous is not None and row[0] != previous:
            lines.append('\\midrule')
        cells = [_latex_escape(c) if i < 2 else c for i, c in enumerate(row)]
        if not multi_class:
            cells = cells[1:]
        elif row[0] == previous:
            cells[0] = ''
        previous = row[0]
        lines.append(' & '.join(cells) + ' \\\\')
    lines += ['\\bottomrule', '\\end{tabular}']
    return '\n'.join(lines)


def footnote(methods, ref, per_image, num_tests, stat) -> str:
    units = 'test images' if per_image else f'{len(methods[0].units)} folds/runs'
    what = 'per-image values' if per_image else f'{stat} values per fold'
    return (f'Mean and std (ddof=1) over {units} of the {what}. p: paired Student\'s '
            f't-test against {ref}, Benjamini-Hochberg corrected over the {num_tests} '
            'tests of this table; ** p < 0.01, * p < 0.05, n.s. otherwise.')


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
    table, num_tests = build_table(methods, args.ref, args.untested, args.per_image)
    formatter = format_latex if args.format == 'latex' else format_markdown
    text = formatter(table, methods, args.untested, args.digits, args.p_values)
    note = footnote(methods, args.ref, args.per_image, num_tests, args.stat)
    prefix = '% ' if args.format == 'latex' else ''
    sys.stdout.write(f'{text}\n\n{prefix}{note}\n')
    return text


if __name__ == '__main__':
    main()
