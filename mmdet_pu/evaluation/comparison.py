"""Comparison tables of methods: mean ± std per class, paired t-tests, BH correction.

The library side of ``tools/compare.py`` (the paper's tables), ``tools/repeat.py``
(repeated runs over seeds and folds) and ``tools/demo.py``. It reads the per-image dumps
``cell_metrics/<split>_per_image.json`` that ``CellDetMetric`` writes when
``tools/test.py`` evaluates a run.

Two tables, each its own family of tests: the paper's, recall, precision and F1 at the
metric's score threshold (:data:`RATES`), and the one that separates the detector's
ranking from the calibration of its threshold (:data:`RANKING`): F1 at the metric's
threshold, F1 at the threshold the run's validation selected and AP. The F1 at the
validation threshold comes from the same test pass: the dump's ranked detections give
the counts at any threshold (:func:`~.rates.counts_at`), here at ``pu_score_thr`` of the
validation dump beside the test dump (``val_per_image.json``, written at the end of
training); a run without one (or whose validation selected none) has no such value
(NaN, shown ``-``, left out of the statistics), and the table's note counts them.

A :class:`Method` holds one value per *unit* for each ``(class, rate)``:

* runs (folds, seeds, seeds x folds; :func:`load_runs`, :func:`load_folds`): a unit is
  one run and its value the run's average (``stat='avg'``, mean over test images) or
  pooled recall / precision / F1. The runs of two methods are paired by position, so
  both lists must be in the same order and each pair must evaluate the same test images
  (checked).
* test images (:func:`load_images`, one run per method): a unit is one test image,
  paired across methods by image id and file name; images where a value is undefined
  for either method are left out.

:func:`build_table` tests every method except the reference and the untested ones
against the reference with a two-sided paired Student's t-test
(:func:`~mmdet_pu.evaluation.statistics.paired_ttest`) for each class and rate; all
p-values of the table form one family for the Benjamini-Hochberg correction.
"""
import glob
import json
import os.path as osp
import re
from typing import Dict, List, NamedTuple, Optional, Sequence

import numpy as np

from .cell_metric import report_path
from .rates import counts_at, detection_rates, nanmean
from .score_threshold import read_validation_thr
from .statistics import benjamini_hochberg, mean_std, paired_ttest, significance_stars

RATES = ('recall', 'precision', 'f1')
#: F1 at the metric's threshold, F1 at the validation threshold, AP.
RANKING = ('f1', 'f1_val', 'ap')
RATE_TITLES = dict(recall='Recall', precision='Precision', f1='F1-score',
                   f1_val='F1 at val. thr.', ap='AP')
#: Pseudo-class of the means over classes (``cell/avg_f1``, ...) of a multi-class dump.
OVERALL = 'mean of classes'


class Method(NamedTuple):
    """Per-unit values of one method.

    ``values[(class, measure)]`` is an array over ``units`` (runs or test images) for
    each measure of :data:`RATES` and :data:`RANKING`; ``sources`` are the dumps the
    values come from, ``score_thrs`` their metric's score thresholds and
    ``val_score_thrs`` the validation thresholds of their runs (None: none).
    """
    name: str
    sources: List[str]
    classes: List[str]
    units: List[object]
    values: Dict[tuple, np.ndarray]
    score_thrs: Sequence[float] = ()
    val_score_thrs: Sequence[Optional[float]] = ()


def natural_key(text: str):
    """Sort key that orders ``fold2`` before ``fold10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r'(\d+)', text)]


def resolve_reports(pattern: str, split: str) -> List[str]:
    """The per-image JSON files a path or glob of work dirs points to, in natural order."""
    matches = sorted(glob.glob(pattern), key=natural_key) or (
        [pattern] if osp.exists(pattern) else [])
    if not matches:
        raise FileNotFoundError(f'{pattern!r} matches no work dir or file')
    reports = []
    for path in matches:
        report = path if path.endswith('.json') else report_path(path, split)
        if not osp.isfile(report):
            raise FileNotFoundError(
                f'{report} not found; run tools/test.py on {path} with CellDetMetric as '
                'the test evaluator first')
        reports.append(report)
    return reports


def load_report(path: str) -> dict:
    """A per-image dump of ``CellDetMetric``, checked for the fields used here."""
    with open(path) as f:
        try:
            report = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f'{path}: not valid JSON ({e}); expected a per-image dump '
                             'of CellDetMetric (rerun tools/test.py)') from e
    for field in ('classes', 'metrics', 'images'):
        if field not in report:
            raise ValueError(f'{path}: field {field!r} missing; expected a per-image '
                             'dump of CellDetMetric')
    return report


def metric(report: dict, name: str):
    """A summary value of a dump by its unprefixed name (``'cell0/avg_recall'``)."""
    head = f'{report["prefix"]}/' if report.get('prefix') else ''
    return report['metrics'][head + name]


def _optional_metric(report: dict, name: str):
    """:func:`metric`, or None where the dump has no such value (an older dump)."""
    try:
        return metric(report, name)
    except KeyError:
        return None


def validation_thr(path: str) -> Optional[float]:
    """The threshold the validation of the run of test dump ``path`` selected: the
    ``pu_score_thr`` of ``val_per_image.json`` beside it; None without that dump or a
    selected threshold."""
    dump = osp.join(osp.dirname(path), 'val_per_image.json')
    return read_validation_thr(dump) if osp.isfile(dump) else None


def image_counts_at(report: dict, score_thr: Optional[float]):
    """TP, FP and FN of each image and class at ``score_thr``, three ``(images, C)``
    arrays from the dump's ranked detections; None when ``score_thr`` is None or the
    dump has no ranked detections (written before the metric kept them)."""
    images = report['images']
    if score_thr is None or any('detections' not in image for image in images):
        return None
    num_classes = len(report['classes'])
    counts = np.array([counts_at(*(image['detections'][k]
                                   for k in ('scores', 'labels', 'matched')),
                                 np.add(image['tp'], image['fn']), score_thr, num_classes)
                       for image in images], dtype=np.int64)
    counts = counts.reshape(len(images), 3, num_classes)
    return counts[:, 0], counts[:, 1], counts[:, 2]


def f1_of_run_at(report: dict, score_thr: Optional[float], stat: str = 'avg'):
    """F1 of a run at ``score_thr``: per class (``stat``: mean over images or pooled)
    and their mean over classes; NaN where :func:`image_counts_at` gives nothing."""
    counts = image_counts_at(report, score_thr)
    if counts is None:
        return np.full(len(report['classes']), np.nan), float('nan')
    if stat == 'avg':
        per_class = nanmean(detection_rates(*counts)['f1'], axis=0)
    else:
        per_class = detection_rates(*(c.sum(0) for c in counts))['f1']
    return per_class, float(nanmean(per_class))


def image_key(image: dict) -> tuple:
    """Identity of a test image across methods: COCO id and file name."""
    return image['img_id'], osp.basename(image['img_path'] or '')


def _as_float(values):
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def load_runs(name: str, reports: List[str], stat: str = 'avg',
              overall: bool = False) -> Method:
    """One value per run: the average (or pooled) rates of each dump in ``reports``.

    Args:
        name: the method's name.
        reports: per-image dumps, one per run, in the order in which they pair with the
            runs of the other methods.
        stat: ``'avg'`` (mean over test images, the paper's) or ``'pooled'``.
        overall: with several classes, add the pseudo-class :data:`OVERALL` holding the
            means over classes (``cell/avg_f1``, ...).
    """
    if not reports:
        raise ValueError(f'{name}: no runs to load')
    loaded = [load_report(path) for path in reports]
    classes = loaded[0]['classes']
    for path, report in zip(reports, loaded):
        if report['classes'] != classes:
            raise ValueError(f'{path}: classes {report["classes"]} differ from '
                             f'{classes} of {reports[0]}')
    values = {(cls, rate): _as_float([metric(r, f'{cls}/{stat}_{rate}') for r in loaded])
              for cls in classes for rate in RATES}
    val_thrs = [validation_thr(path) for path in reports]
    f1_val = [f1_of_run_at(r, thr, stat) for r, thr in zip(loaded, val_thrs)]
    for c, cls in enumerate(classes):
        values[(cls, 'f1_val')] = _as_float([per_class[c] for per_class, _ in f1_val])
        values[(cls, 'ap')] = _as_float([_optional_metric(r, f'{cls}/ap') for r in loaded])
    if overall and len(classes) > 1:
        values.update({(OVERALL, rate): _as_float([metric(r, f'{stat}_{rate}')
                                                   for r in loaded]) for rate in RATES})
        values[(OVERALL, 'f1_val')] = _as_float([mean for _, mean in f1_val])
        values[(OVERALL, 'ap')] = _as_float([_optional_metric(r, 'ap') for r in loaded])
        classes = [*classes, OVERALL]
    units = [frozenset(image_key(image) for image in r['images']) for r in loaded]
    return Method(name, list(reports), list(classes), units, values,
                  [r.get('score_thr') for r in loaded], val_thrs)


def load_folds(name: str, pattern: str, split: str, stat: str = 'avg') -> Method:
    """One value per fold (work dir) matched by ``pattern``, in natural order."""
    return load_runs(name, resolve_reports(pattern, split), stat)


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
    val_thr = validation_thr(sources[0])
    counts = image_counts_at(report, val_thr)
    f1_val = (np.full((len(units), len(classes)), np.nan) if counts is None
              else detection_rates(*counts)['f1'])
    for c, cls in enumerate(classes):
        values[(cls, 'f1_val')] = f1_val[:, c]
        values[(cls, 'ap')] = _as_float([image['ap'][c] if 'ap' in image else None
                                         for image in report['images']])
    return Method(name, sources, classes, units, values, [report.get('score_thr')],
                  [val_thr])


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
        raise ValueError(f'{method.name} has {len(method.units)} folds/runs, {ref.name} '
                         f'{len(ref.units)}; the paired t-test needs the same folds/runs')
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


def build_table(methods: List[Method], ref: str, untested=(), per_image=False,
                measures: Sequence[str] = RATES):
    """``{(method, class, measure): Cell}`` over ``measures`` and the number of tests in
    the table's BH family."""
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
            for rate in measures:
                tests.append((m.name, cls, rate))
                raw_p.append(paired_ttest(*pair_values(m, reference, cls, rate,
                                                       per_image))[1])
    adjusted = dict(zip(tests, benjamini_hochberg(raw_p)))
    table = {}
    for m in methods:
        for cls in reference.classes:
            for rate in measures:
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


def table_rows(table, methods, untested, digits, show_p, bold, measures=RATES):
    """Rows of text cells: ``[class, method, mean, std, p, ...]`` per method and class."""
    classes = methods[0].classes
    rows = []
    for cls in classes:
        best = {rate: best_methods(table, methods, untested, cls, rate)
                for rate in measures}
        for m in methods:
            row = [cls, m.name]
            for rate in measures:
                cell = table[(m.name, cls, rate)]
                mean, std = _number(cell.mean, digits), _number(cell.std, digits)
                if m.name in best[rate]:
                    mean, std = (bold(v) if v != '-' else v for v in (mean, std))
                row += [mean, std, _p_text(cell, show_p, digits)]
            rows.append(row)
    return rows


def ranking_titles(methods) -> Dict[str, str]:
    """Column titles of the :data:`RANKING` table: the F1 column names the metric's
    score threshold when every dump has the same."""
    thrs = {thr for m in methods for thr in m.score_thrs}
    f1 = f'F1 at {thrs.pop():g}' if len(thrs) == 1 and None not in thrs else 'F1 at test thr.'
    return dict(RATE_TITLES, f1=f1)


def format_markdown(table, methods, untested=(), digits=3, show_p=False,
                    measures: Sequence[str] = RATES, titles=None) -> str:
    """The table in Markdown; the class column only when there are several classes."""
    titles = titles or RATE_TITLES
    rows = table_rows(table, methods, untested, digits, show_p, lambda s: f'**{s}**',
                      measures)
    header = ['Class', 'Method']
    for rate in measures:
        header += [f'{titles[rate]} mean', 'std', 'p']
    if len(methods[0].classes) == 1:
        header, rows = header[1:], [row[1:] for row in rows]
    lines = ['| ' + ' | '.join(header) + ' |',
             '|' + '|'.join(['---'] * len(header)) + '|']
    lines += ['| ' + ' | '.join(row) + ' |' for row in rows]
    return '\n'.join(lines)


def _latex_escape(text: str) -> str:
    return re.sub(r'([&%$#_{}])', r'\\\1', str(text))


def format_latex(table, methods, untested=(), digits=3, show_p=False,
                 measures: Sequence[str] = RATES, titles=None) -> str:
    """The table as a LaTeX ``tabular`` (booktabs, multirow), the paper's layout."""
    titles = titles or RATE_TITLES
    rows = table_rows(table, methods, untested, digits, show_p,
                      lambda s: f'\\textbf{{{s}}}', measures)
    multi_class = len(methods[0].classes) > 1
    lead = ['Cell type', 'Method'] if multi_class else ['Method']
    columns = 'l' * len(lead) + ' ccc' * len(measures)
    first = ' & '.join(f'\\multirow{{2}}{{*}}{{{t}}}' for t in lead)
    first += ''.join(f' & \\multicolumn{{3}}{{c}}{{{titles[r]}}}' for r in measures)
    rules = ' '.join(f'\\cmidrule(lr){{{len(lead) + 3 * i + 1}-{len(lead) + 3 * i + 3}}}'
                     for i in range(len(measures)))
    second = ' & ' * (len(lead) - 1) + ''.join(' & mean & std & $p$' for _ in measures)
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
    """What the table's numbers and p-values are."""
    units = 'test images' if per_image else f'{len(methods[0].units)} folds/runs'
    what = 'per-image values' if per_image else f'{stat} values per fold/run'
    return (f'Mean and std (ddof=1) over {units} of the {what}. p: paired Student\'s '
            f't-test against {ref}, Benjamini-Hochberg corrected over the {num_tests} '
            'tests of this table; ** p < 0.01, * p < 0.05, n.s. otherwise.')


def ranking_footnote(methods, ref, per_image, num_tests, stat) -> str:
    """What the :data:`RANKING` table's numbers are, and how many runs lack a
    validation threshold."""
    thrs = [thr for m in methods for thr in m.val_score_thrs]
    note = (f'{footnote(methods, ref, per_image, num_tests, stat)} F1 at val. thr.: the '
            'test F1 at the score threshold the run\'s validation selected (pu_score_thr '
            'of its val_per_image.json), from the same test pass. AP: all-point '
            'interpolated average precision of every detection the model outputs, '
            'matched as for F1, ranked over the test set.')
    missing = sum(thr is None for thr in thrs)
    if missing:
        note += (f' {missing} of {len(thrs)} runs have no validation threshold (no '
                 'validation dump, or no candidate found a labeled cell): their F1 at '
                 'val. thr. is undefined (-) and left out.')
    return note


class Comparison(NamedTuple):
    """Both tables of a comparison (:func:`compare`).

    ``rates``: the :data:`RATES` table and its number of tests; ``ranking``: the
    :data:`RANKING` table and its number of tests (each table its own BH family).
    """
    methods: List[Method]
    ref: str
    untested: Sequence[str]
    per_image: bool
    rates: dict
    rate_tests: int
    ranking: dict
    ranking_tests: int


def compare(methods: List[Method], ref: str, untested=(), per_image=False) -> Comparison:
    """The :data:`RATES` and :data:`RANKING` tables of ``methods`` against ``ref``."""
    rates, rate_tests = build_table(methods, ref, untested, per_image)
    ranking, ranking_tests = build_table(methods, ref, untested, per_image, RANKING)
    return Comparison(methods, ref, list(untested), per_image, rates, rate_tests, ranking,
                      ranking_tests)


def format_comparison(comparison: Comparison, stat: str = 'avg', fmt: str = 'md',
                      digits: int = 3, show_p: bool = False) -> str:
    """Both tables, each followed by its note (``fmt``: ``'md'`` or ``'latex'``, whose
    notes are ``%`` comments)."""
    c = comparison
    formatter = format_latex if fmt == 'latex' else format_markdown
    prefix = '% ' if fmt == 'latex' else ''
    rates = formatter(c.rates, c.methods, c.untested, digits, show_p)
    ranking = formatter(c.ranking, c.methods, c.untested, digits, show_p, RANKING,
                        ranking_titles(c.methods))
    notes = (footnote(c.methods, c.ref, c.per_image, c.rate_tests, stat),
             ranking_footnote(c.methods, c.ref, c.per_image, c.ranking_tests, stat))
    return f'{rates}\n\n{prefix}{notes[0]}\n\n{ranking}\n\n{prefix}{notes[1]}'


def _plain(value):
    """A float for JSON: NaN becomes None."""
    return None if value is None or np.isnan(value) else float(value)


def table_dict(table, methods, measures: Sequence[str] = RATES) -> dict:
    """The table as JSON-ready data: ``{method: {class: {measure: {...}}}}``.

    Each entry holds ``mean``, ``std``, ``p`` (BH-adjusted, None when not tested) and
    ``values`` (one per unit, in the methods' unit order); NaN is None.
    """
    return {m.name: {cls: {rate: dict(mean=_plain(table[(m.name, cls, rate)].mean),
                                      std=_plain(table[(m.name, cls, rate)].std),
                                      p=_plain(table[(m.name, cls, rate)].p),
                                      values=[_plain(v) for v in m.values[(cls, rate)]])
                           for rate in measures}
                     for cls in m.classes}
            for m in methods}


def ranking_dict(table, num_tests: int, methods) -> dict:
    """A :data:`RANKING` table as JSON-ready data, with its number of tests and the
    validation threshold of every unit's run (None: none)."""
    return dict(table=table_dict(table, methods, RANKING), num_tests=num_tests,
                val_score_thrs={m.name: list(m.val_score_thrs) for m in methods})


def draw_rates(ax, table, methods, cls, title=None):
    """Bars of mean recall / precision / F1 per method with std error bars, and the
    value of every unit (run) as a dot on its bar."""
    width = 0.8 / len(RATES)
    for k, rate in enumerate(RATES):
        offset = (k - (len(RATES) - 1) / 2) * width
        xs = np.arange(len(methods)) + offset
        cells = [table[(m.name, cls, rate)] for m in methods]
        means = [0.0 if np.isnan(c.mean) else c.mean for c in cells]
        stds = [0.0 if np.isnan(c.std) else c.std for c in cells]
        bars = ax.bar(xs, means, width, yerr=stds, capsize=3, label=RATE_TITLES[rate],
                      alpha=0.8)
        color = bars.patches[0].get_facecolor() if bars.patches else None
        for x, m in zip(xs, methods):
            values = m.values[(cls, rate)]
            values = values[~np.isnan(values)]
            jitter = np.linspace(-0.25, 0.25, values.size) * width if values.size > 1 else 0
            ax.scatter(x + jitter + np.zeros(values.size), values, s=12, color='black',
                       zorder=3, edgecolors=color, linewidths=0.5)
    ax.set_xticks(range(len(methods)), [m.name for m in methods])
    ax.set_ylim(0, 1.15)
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_ylabel('mean ± std')
    ax.legend(ncol=len(RATES), fontsize=8, loc='upper left')
    ax.set_title(title or cls)
