"""The embedded demo, a preset of :mod:`.repeat`: incomplete annotations hurt a detector,
PU learning recovers.

A preset names the methods of a variant (each with its config and its role in the gap
closed) and the claim, the one paired test of the summary: the PU method against its
comparison. :func:`run_demo` prepares the synthetic data (``data_prep/prepare.py
synthetic``), plans every method x seed on it (:func:`.repeat.plan_runs`, overlays of the
first seed), runs the plan and compares the runs (:mod:`.comparison`), then writes
``results.md``, ``results.json`` and ``figure.png`` (:mod:`mmdet_pu.workflow.reports`).

The summary gives per method the mean ± std over seeds of the average recall, precision
and F1 (per class too for several classes) and the gap closed by the mean F1,
``(F1 - F1 baseline) / (F1 upper bound - F1 baseline)``; the claim's paired t-test is the
only test of that table (BH over its rates and classes). The ranking table below it
(F1 at the test threshold, F1 at the validation threshold, AP) tests every method but
the upper bound against the claim's reference.
"""
import os.path as osp
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from mmdet_pu.workflow.reports import pyplot, write_results
from mmdet_pu.workflow.runs import Run
from .comparison import OVERALL, RANKING, build_table, load_runs
from .comparison_format import (draw_rates, format_markdown, ranking_dict,
                                ranking_footnote, ranking_titles, table_dict)
from .repeat import plan_runs, run_plan

REPO = Path(__file__).resolve().parents[1]


class Preset(NamedTuple):
    """The methods of a demo variant, ``(name, config, role)`` with the role
    ``'baseline'``, ``'method'`` or ``'upper_bound'``, and its claim ``(reference,
    compared method)``."""
    methods: List[Tuple[str, str, str]]
    claim: Tuple[str, str]


PRESETS = dict(
    binary=Preset([
        ('CE baseline', 'configs/synthetic/synthetic_keep1_ce.py', 'baseline'),
        ('naive PU', 'configs/synthetic/synthetic_keep1_naive_pu.py', 'method'),
        ('PU', 'configs/synthetic/synthetic_keep1_pu.py', 'method'),
        ('upper bound', 'configs/synthetic/synthetic_upper_bound.py', 'upper_bound'),
    ], claim=('PU', 'naive PU')),
    multi=Preset([
        ('CE baseline', 'configs/synthetic/synthetic_multi_cap2_ce.py', 'baseline'),
        ('multi-class PU', 'configs/synthetic/synthetic_multi_cap2_mpu.py', 'method'),
        ('upper bound', 'configs/synthetic/synthetic_multi_upper_bound.py', 'upper_bound'),
    ], claim=('multi-class PU', 'CE baseline')))


def prepare_data(variant: str, data_root: str, num_images: int,
                 echo: Callable[[str], None] = print) -> None:
    """Generate the synthetic dataset of ``variant`` unless ``data_root`` holds it."""
    marker = osp.join(data_root, 'annotations', 'fold0', 'train.json')
    if osp.isfile(marker):
        echo(f'data: {data_root} (already prepared)')
        return
    echo(f'generating {num_images} synthetic {variant} images into {data_root}')
    subprocess.run([sys.executable, 'data_prep/prepare.py', 'synthetic', '--variant', variant,
                    '--out', osp.abspath(data_root), '--num-images', str(num_images),
                    '--seed', '0', '--no-progress'], cwd=REPO, check=True)


def run_options(data_root: str, iters: Optional[int] = None,
                cfg_options: Sequence[str] = ()) -> List[str]:
    """``--cfg-options`` of every run: the data and the iterations.

    Validation runs once, at the end: it selects a score threshold with the PU criterion
    (``cell/pu_score_thr``), which ``--cfg-options test_evaluator.score_thr=val`` tests
    with instead of 0.5.
    """
    root = data_root.rstrip('/') + '/'
    options = [f'{loader}.dataset.data_root={root}'
               for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader')]
    if iters:
        # the learning-rate step of schedules/cpu_short.py follows: 80 % of training
        options += [f'train_cfg.max_iters={iters}',
                    f'train_cfg.val_interval={iters}',
                    f'default_hooks.checkpoint.interval={iters}']
    return options + list(cfg_options)


def plan_demo(variant: str, work_dir: str, data_root: str, seeds: Sequence[int],
              iters: Optional[int] = None,
              cfg_options: Sequence[str] = ()) -> Dict[str, List[Run]]:
    """``{method name: [Run per seed]}``; the overlays come from the first seed."""
    methods = PRESETS[variant].methods
    return plan_runs([name for name, _, _ in methods],
                     [str(REPO / config) for _, config, _ in methods], seeds, work_dir,
                     cfg_options=run_options(data_root, iters, cfg_options),
                     show_dir='overlays')


def _mean(table, name, cls, rate):
    mean = table[(name, cls, rate)].mean
    return None if np.isnan(mean) else mean


def summarise(variant, plan, methods, table):
    """Rows of the table: mean and std over seeds, gap closed of the mean F1."""
    classes = methods[0].classes
    main_class = OVERALL if OVERALL in classes else classes[0]
    roles = {name: role for name, _, role in PRESETS[variant].methods}
    configs = {name: config for name, config, _ in PRESETS[variant].methods}
    baseline = next(n for n, r in roles.items() if r == 'baseline')
    upper = next(n for n, r in roles.items() if r == 'upper_bound')

    def f1(name):
        return _mean(table, name, main_class, 'f1') or 0.0

    gap = f1(upper) - f1(baseline)
    rows = []
    for m in methods:
        row = dict(method=m.name, config=configs[m.name])
        for rate in ('recall', 'precision', 'f1'):
            cell = table[(m.name, main_class, rate)]
            row[rate] = _mean(table, m.name, main_class, rate)
            row[f'{rate}_std'] = None if np.isnan(cell.std) else cell.std
        for c in classes if len(classes) > 1 else ():
            if c != OVERALL:
                row[f'f1/{c}'] = _mean(table, m.name, c, 'f1')
        if roles[m.name] == 'method':
            row['gap_closed'] = (f1(m.name) - f1(baseline)) / gap if gap > 0 else None
        seconds = [run.train_seconds for run in plan[m.name]]
        row['train_minutes'] = (round(float(np.mean(seconds)) / 60, 2)
                                if None not in seconds else None)
        rows.append(row)
    return rows, main_class


def significance(variant, methods, table, num_tests, main_class):
    """Whether the PU method beats its comparison on F1, and the line that says so."""
    ref, other = PRESETS[variant].claim
    n = len(methods[0].units)
    diff = table[(ref, main_class, 'f1')].mean - table[(other, main_class, 'f1')].mean
    p = table[(other, main_class, 'f1')].p
    if np.isnan(p):
        verdict = 'not tested'
        line = (f'{ref} > {other} on F1: not tested with {n} seed(s), the paired t-test '
                f'needs 2 or more (mean difference {diff:+.3f})')
    else:
        if diff <= 0:
            verdict = f'no: {ref} has the lower mean F1'
        else:
            verdict = 'significant' if p < 0.05 else 'not significant'
        line = (f'{ref} > {other} on F1 over {n} seeds: {verdict} (mean difference '
                f'{diff:+.3f}, two-sided paired t-test p = {p:.3f}, Benjamini-Hochberg '
                f'corrected over {num_tests} tests: recall, precision and F1 per class)')
    return dict(ref=ref, other=other, rate='f1', mean_difference=float(diff),
                p=None if np.isnan(p) else float(p), num_tests=num_tests,
                verdict=verdict), line


def _mean_std(row, key):
    mean, std = row[key], row[f'{key}_std']
    if mean is None:
        return '-'
    return f'{mean:.3f}' if std is None else f'{mean:.3f} ± {std:.3f}'


def markdown_table(rows, classes):
    per_class = [f'f1/{c}' for c in classes if c != OVERALL] if len(classes) > 1 else []
    head = ['method', 'recall', 'precision', 'F1', *[k.replace('f1/', 'F1 ') for k in per_class],
            'gap closed']
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for r in rows:
        gap = f"{100 * r['gap_closed']:.0f} %" if r.get('gap_closed') is not None else ''
        cells = [r['method'], *[_mean_std(r, k) for k in ('recall', 'precision', 'f1')],
                 *['-' if r[k] is None else f'{r[k]:.3f}' for k in per_class], gap]
        lines.append('| ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


def draw_figure(plan, methods, table, main_class):
    """Mean ± std bars with the seeds as dots, and one TP/FP/FN overlay per method."""
    plt = pyplot()
    fig = plt.figure(figsize=(4 * len(methods), 8))
    ax = fig.add_subplot(2, 1, 1)
    n = len(methods[0].units)
    draw_rates(ax, table, methods, main_class,
               title=f'Synthetic cells, tiled whole-image evaluation, {n} seed(s)')
    for i, m in enumerate(methods):
        first = plan[m.name][0]
        found = sorted(Path(first.work_dir).glob('*/overlays/**/*.png'))
        sub = fig.add_subplot(2, len(methods), len(methods) + i + 1)
        if found:
            sub.imshow(plt.imread(str(found[0])))
        sub.set_title(f'{first.name}\nTP green, FP red, FN yellow', fontsize=9)
        sub.axis('off')
    fig.tight_layout()
    return fig


def run_demo(variant: str, work_dir: str, data_root: str, num_images: int = 60,
             seeds: Sequence[int] = (0, 1, 2), iters: Optional[int] = None, jobs: int = 2,
             cfg_options: Sequence[str] = (),
             echo: Callable[[str], None] = print) -> Tuple[str, dict]:
    """Prepare the data, run the preset of ``variant``, compare and write the results.

    Returns:
        The Markdown text and the content of ``results.json``.
    """
    t0 = time.time()
    prepare_data(variant, data_root, num_images, echo)
    plan = plan_demo(variant, work_dir, data_root, seeds, iters, cfg_options)
    run_plan(plan, jobs, echo=echo, status_every=30)

    ref, other = PRESETS[variant].claim
    upper = [name for name, _, role in PRESETS[variant].methods if role == 'upper_bound']
    methods = [load_runs(name, [run.report for run in plan[name]], overall=True)
               for name in plan]
    table, num_tests = build_table(methods, ref, untested=[n for n in plan
                                                           if n not in (ref, other)])
    ranking, ranking_tests = build_table(methods, ref, upper, measures=RANKING)
    rows, main_class = summarise(variant, plan, methods, table)
    claim, claim_line = significance(variant, methods, table, num_tests, main_class)
    text = (f'{markdown_table(rows, methods[0].classes)}\n\n{claim_line}.\n\nMean ± std '
            f'over seeds {list(seeds)} of the average over test images; gap closed = '
            '(F1 - F1 CE) / (F1 upper bound - F1 CE) of the mean F1.\n\n'
            f'{format_markdown(ranking, methods, upper, 3, True, RANKING, ranking_titles(methods))}'
            f'\n\n{ranking_footnote(methods, ref, False, ranking_tests, "avg")}\n')
    minutes = (time.time() - t0) / 60
    results = dict(variant=variant, data_root=data_root, seeds=list(seeds), iters=iters,
                   minutes=round(minutes, 2), rows=rows, significance=claim,
                   table=table_dict(table, methods),
                   ranking=ranking_dict(ranking, ranking_tests, methods),
                   runs={name: [run.work_dir for run in runs]
                         for name, runs in plan.items()},
                   metrics={name: [run.metrics for run in runs]
                            for name, runs in plan.items()})
    write_results(work_dir, text, results, indent=2, figure='figure.png',
                  draw=lambda: draw_figure(plan, methods, table, main_class))
    return text, results
