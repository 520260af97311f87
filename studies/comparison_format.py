"""A comparison of methods (:mod:`.comparison`) written out: its tables in Markdown or
LaTeX (the paper's layout; the best mean of each column bold) with the notes that say
what the numbers and p-values are, as JSON-ready data, and as bars with the value of
every run.
"""
import re
from typing import Dict, Sequence

import numpy as np

from mmdet_pu.evaluation.rates import RATES
from mmdet_pu.evaluation.statistics import significance_stars
from .comparison import RANKING, Cell, Comparison

RATE_TITLES = dict(recall='Recall', precision='Precision', f1='F1-score',
                   f1_val='F1 at val. thr.', ap='AP')


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
