"""Which prior rule holds across a family of synthetic regimes
(``tools/prior_family.py``; the results: docs/experiments.md, "A family of synthetic
regimes").

For each regime (one config, :data:`REGIMES`), in ``<work dir>/<regime>/``:

* ``provisional/seed<K>``: the config trained and tested as it is, per seed;
* ``oracle.json``: the oracle shares of each stage (``tools/estimate_prior.py --oracle``
  on the seed-0 provisional detector: the complete labels of the synthetic sets);
* ``grid<i>/seed<K>``: six trainings at the oracle shares scaled in odds by
  :data:`GRID_FACTORS` (every stage alike), all six at the first seed and, at the
  others, the :data:`REPLICATED` values with the best test F1 at the first seed (the
  others are far from the best there and are reported at that seed);
* ``fit/seed<K>``: the shipped workflow, :func:`~mmdet_pu.workflow.prior_fit.fit_prior`,
  on the provisional run of that seed (linked, not trained again), on the config as it is
  (``box_fit=False``: the family compares prior rules on one detector).

Every run is tested on the complete test labels: F1 at 0.5, F1 at the
validation-chosen threshold and AP. :func:`summarize` reports per regime and grid value
the mean ± std over seeds, the best value in hindsight (by mean F1 at 0.5, and by mean
AP), and the choice of each rule with its test metrics: the workflow, the paper's
validation recall over the grid, Lee & Liu's criterion over the grid, the provisional
priors.
"""
import os
import os.path as osp
from typing import Callable, Dict, List, Sequence

import numpy as np

from mmdet_pu.evaluation.metric_dump import PER_IMAGE_FIELDS, read_metric_dump
from mmdet_pu.evaluation.statistics import mean_std
from mmdet_pu.prior.candidates import candidate_options, estimated_shares, option_strings
from mmdet_pu.prior.estimate_file import read_estimate
from mmdet_pu.prior.selection import choose, choose_by_pu_criterion, read_val_metrics
from mmdet_pu.workflow.estimate import estimate_run
from mmdet_pu.workflow.fit_report import FIT_SUMMARY, read_fit_summary, returned_training
from mmdet_pu.workflow.prior_fit import fit_prior
from mmdet_pu.workflow.reports import write_results
from mmdet_pu.workflow.runs import Run, run_all
from .comparison import f1_of_run_at, validation_thr

#: Regime -> config (``configs/synthetic/``): the look and the annotation of the data.
REGIMES = {
    'keep1': 'synthetic_keep1_pu.py',
    'sparse': 'synthetic_sparse_keep1_pu.py',
    'nuclei': 'synthetic_nuclei_keep4_pu.py',
    'small': 'synthetic_small_keep1_pu.py',
    'large': 'synthetic_large_keep1_pu.py',
    'keep5': 'synthetic_keep5_pu.py',
    'region': 'synthetic_region_pu.py',
    'multi': 'synthetic_multi_cap2_mpu_prior_update.py',
}
#: Odds factors of the grid on the oracle shares.
GRID_FACTORS = (1 / 3, 1 / 2, 3 / 4, 1, 3 / 2, 9 / 4)
#: How many grid values, the best at the first seed, are trained at the other seeds.
REPLICATED = 3
MEASURES = ('f1', 'f1_val', 'ap')


def _seed_run(config, work_dir, name, seed, options=()) -> Run:
    return Run(config, osp.join(work_dir, name, f'seed{seed}'),
               [*options, f'randomness.seed={seed}'], name=f'{name} seed {seed}')


def oracle_report(config: str, regime_dir: str, jobs: int = 1) -> dict:
    """The oracle shares from the seed-0 provisional run (trained first if needed)."""
    path = osp.join(regime_dir, 'oracle.json')
    if not osp.isfile(path):
        provisional = _seed_run(config, regime_dir, 'provisional', 0)
        run_all([provisional], jobs=jobs)
        return estimate_run(provisional, path, ['--oracle']).report
    return read_estimate(path).report


def replicated(regime_dir: str, seed: int) -> List[int]:
    """The grid indices with the :data:`REPLICATED` best test F1 at ``seed`` (ties to the
    smaller index); none until every value of that seed is tested."""
    found = {}
    for i in range(len(GRID_FACTORS)):
        path = osp.join(regime_dir, f'grid{i}', f'seed{seed}', 'cell_metrics',
                        'test_per_image.json')
        if not osp.isfile(path):
            return []
        found[i] = test_measures(osp.dirname(osp.dirname(path)))['f1']
    return sorted(sorted(found, key=lambda i: (-found[i], i))[:REPLICATED])


def grid_runs(config: str, regime_dir: str, report: dict,
              seeds: Sequence[int]) -> Dict[int, List[Run]]:
    """``{grid index: [Run per seed]}``: every value at the first seed; at the others,
    the :func:`replicated` ones (none until the first seed is tested)."""
    shares = estimated_shares(report, 'oracle', 'oracle')
    again = replicated(regime_dir, seeds[0])
    runs = {}
    for i, factor in enumerate(GRID_FACTORS):
        options = option_strings(candidate_options(report, factor, shares, rpn_digits=4))
        runs[i] = [_seed_run(config, regime_dir, f'grid{i}', seed, options)
                   for seed in seeds if seed == seeds[0] or i in again]
    return runs


def run_regime(regime: str, config_dir: str, work_dir: str, seeds: Sequence[int],
               jobs: int = 1, echo: Callable[[str], None] = print) -> None:
    """Train, test and fit one regime (module docstring); resumable."""
    config = osp.join(config_dir, REGIMES[regime])
    regime_dir = osp.join(work_dir, regime)
    report = oracle_report(config, regime_dir, jobs)
    provisional = [_seed_run(config, regime_dir, 'provisional', seed) for seed in seeds]
    first = [runs[0] for runs in grid_runs(config, regime_dir, report, seeds).values()]
    run_all([*provisional, *first], jobs=jobs, echo=echo)
    others = [run for runs in grid_runs(config, regime_dir, report, seeds).values()
              for run in runs[1:]]
    run_all(others, jobs=jobs, echo=echo)
    for seed, run in zip(seeds, provisional):
        fit_dir = osp.join(regime_dir, 'fit', f'seed{seed}')
        os.makedirs(fit_dir, exist_ok=True)
        link = osp.join(fit_dir, 'provisional')
        if not osp.lexists(link):
            os.symlink(osp.relpath(run.work_dir, fit_dir), link)
        fit_prior(config, fit_dir, seed=seed, jobs=jobs, echo=echo, box_fit=False)


def test_measures(run_dir: str) -> dict:
    """F1 at the test threshold, F1 at the validation-chosen one, and AP of a run (mean
    over classes)."""
    path = osp.join(run_dir, 'cell_metrics', 'test_per_image.json')
    report = read_metric_dump(path, PER_IMAGE_FIELDS)
    head = f'{report["prefix"]}/' if report.get('prefix') else ''
    f1_val = f1_of_run_at(report, validation_thr(path))[1]
    return dict(f1=report['metrics'][head + 'avg_f1'], ap=report['metrics'][head + 'ap'],
                f1_val=None if np.isnan(f1_val) else f1_val)


def summarize(regime: str, work_dir: str, seeds: Sequence[int]) -> dict:
    """The regime's grid, best values in hindsight and each rule's choice (module
    docstring) from the runs in ``<work_dir>/<regime>``."""
    regime_dir = osp.join(work_dir, regime)
    report = read_estimate(osp.join(regime_dir, 'oracle.json')).report
    shares = estimated_shares(report, 'oracle', 'oracle')
    grid = []
    for i, factor in enumerate(GRID_FACTORS):
        options = candidate_options(report, factor, shares, rpn_digits=4)
        runs = {seed: osp.join(regime_dir, f'grid{i}', f'seed{seed}') for seed in seeds}
        runs = {s: d for s, d in runs.items() if osp.isfile(osp.join(
            d, 'cell_metrics', 'test_per_image.json'))}
        per_seed = {s: test_measures(d) for s, d in runs.items()}
        entry = dict(index=i, factor=factor, priors={k: v for k, v in options.items()
                                                     if k.endswith(('.prior', '.priors'))},
                     seeds=sorted(per_seed), per_seed=per_seed)
        for name in MEASURES:
            entry[name] = mean_std([m[name] for m in per_seed.values()], undefined=None)
        grid.append(entry)
    # the best value in hindsight among those tested at every seed; while the other
    # seeds' values are missing, among the values of the seeds that have most
    most = max(len(g['seeds']) for g in grid)
    if not most:
        raise FileNotFoundError(f'{regime_dir}: no grid run is tested')
    pool = [g for g in grid if len(g['seeds']) == most]
    best = {name: max(pool, key=lambda g: -1 if g[name][0] is None else g[name][0])
            for name in ('f1', 'ap')}

    rules = {}
    chosen_dirs = []
    for seed in seeds:
        fit_dir = osp.join(regime_dir, 'fit', f'seed{seed}')
        if osp.isfile(osp.join(fit_dir, FIT_SUMMARY)):  # a fit still running is left out
            chosen_dirs.append(returned_training(read_fit_summary(fit_dir))['run_dir'])
    rules['workflow'] = chosen_dirs
    rules['provisional'] = [d for d in (osp.join(regime_dir, 'provisional', f'seed{s}')
                                        for s in seeds)
                            if osp.isfile(osp.join(d, 'cell_metrics', 'test_per_image.json'))]
    for rule, chooser in (('recall over the grid', choose),
                          ('Lee & Liu over the grid', choose_by_pu_criterion)):
        picks = []
        for seed in seeds:
            rows = []
            for g in grid:
                run_dir = osp.join(regime_dir, f'grid{g["index"]}', f'seed{seed}')
                metrics = read_val_metrics(run_dir)
                if metrics is not None:
                    rows.append(dict(metrics, prior=g['factor'], run_dir=run_dir))
            if len(rows) < len(grid):  # a rule over the grid needs the whole grid
                continue
            try:
                picks.append(chooser(rows)['run_dir'])
            except RuntimeError:  # no run detects a labeled validation cell
                picks.append(None)
        rules[rule] = picks
    rule_rows = {}
    for rule, run_dirs in rules.items():
        measures = [test_measures(d) for d in run_dirs if d is not None]
        rule_rows[rule] = dict(run_dirs=run_dirs, seeds=len(measures), **{
            name: mean_std([m[name] for m in measures], undefined=None)
            for name in MEASURES})
    return dict(regime=regime, shares=shares, grid=grid,
                best={k: dict(index=v['index'], factor=v['factor'], value=v[k][0],
                              seeds=len(v['seeds'])) for k, v in best.items()},
                rules=rule_rows)


def _cell(value):
    """``mean ± std`` of a :func:`mean_std` pair, ``mean`` without a std, ``-`` without
    a mean."""
    mean, std = value
    if mean is None:
        return '-'
    return f'{mean:.3f}' if std is None else f'{mean:.3f} ± {std:.3f}'


def format_markdown(results: List[dict]) -> str:
    """One table per regime (the grid) and the summary table of the rules."""
    lines = []
    for r in results:
        lines += [f'### {r["regime"]}', '',
                  '| odds factor | priors | seeds | F1 at 0.5 | F1 at val. thr. | AP |',
                  '|---|---|---|---|---|---|']
        for g in r['grid']:
            priors = ', '.join(f'{k.split(".")[1]} {v}' for k, v in g['priors'].items())
            lines.append(f'| {g["factor"]:.3g} | {priors} | {len(g["seeds"])} | '
                         + ' | '.join(_cell(g[name]) for name in MEASURES) + ' |')
        lines.append('')
    lines += ['| regime | best F1 at 0.5 (grid; seeds) | best AP (grid; seeds) | rule | '
              'seeds | F1 at 0.5 | F1 at val. thr. | AP | ΔF1 | ΔAP |',
              '|---|---|---|---|---|---|---|---|---|---|']

    def gap(value, best):
        return '-' if value is None or best is None else f'{value - best:+.3f}'

    for r in results:
        best_f1, best_ap = r['best']['f1']['value'], r['best']['ap']['value']
        for rule, row in r['rules'].items():
            lines.append(f'| {r["regime"]} | {_cell((best_f1, None))}; '
                         f'{r["best"]["f1"]["seeds"]} | {_cell((best_ap, None))}; '
                         f'{r["best"]["ap"]["seeds"]} | {rule} | {row["seeds"]} | '
                         + ' | '.join(_cell(row[name]) for name in MEASURES)
                         + f' | {gap(row["f1"][0], best_f1)} | {gap(row["ap"][0], best_ap)} |')
    return '\n'.join(lines)


def write_family(work_dir: str, results: List[dict]) -> str:
    text = format_markdown(results)
    write_results(work_dir, text + '\n', dict(results=results))
    return text
