"""Does the estimated prior replace the sweep? Both, over seeds, side by side
(``tools/estimate_vs_sweep.py``).

Per seed K (``randomness.seed=K``), in ``<work dir>/seed<K>/``:

1. **the sweep**: one training and test per value, in ``prior_<value>/``, the value set
   at the sweep's keys (:func:`~.prior_sweep.sweep_keys`);
2. **the estimate**: ``tools/estimate_prior.py`` (with the given options) on the
   checkpoint of the provisional value (default: the config's own prior; a sweep value,
   added to the values if missing), written to ``prior.json``;
3. one more training and test with the estimate's ``cfg_options`` (its recommendation:
   for a multi-class config the fixed class priors), in ``estimate/``.

The estimate costs two trainings (the provisional prior's and the estimate's), the sweep
one per value. Runs go through :func:`mmdet_pu.workflow.runs.run_all` and are
resumable; an existing ``prior.json`` is reused.

Reported per seed, from the runs' validation and test dumps: validation average recall
and test average F1 of every run; the sweep's choice by validation average recall (the
paper's criterion, ties to the smaller prior) and its recall band
(:mod:`mmdet_pu.prior.selection`);
Lee & Liu's choice between the provisional and the estimate run (none when neither run
detects a labeled validation cell); and the sweep value with the best test F1
(hindsight, not a selection). For the estimate and for that choice, whether it agrees
with the sweep (:func:`agreement`). Over the seeds: mean ± std (ddof=1; no std for a
single seed) of the test F1 of each way to the prior and the number of seeds that agree.
:func:`write_study` writes ``results.md`` and ``results.json``.
"""
import math
import os.path as osp
from typing import Callable, Dict, Optional, Sequence

from mmdet_pu.evaluation.cell_metric import dump_metric
from mmdet_pu.evaluation.metric_dump import read_metric_dump
from mmdet_pu.evaluation.statistics import mean_std
from mmdet_pu.prior.keys import get_key
from mmdet_pu.prior.selection import (choose, choose_by_pu_criterion, read_val_metrics,
                                      recall_band)
from mmdet_pu.workflow.estimate import estimate_run, existing_estimate
from mmdet_pu.workflow.reports import write_results
from mmdet_pu.workflow.runs import Run, run_all
from .prior_sweep import sweep_keys, value_dir, value_options

TEST_F1 = 'avg_f1'


def seed_dir(work_dir: str, seed: int) -> str:
    return osp.join(work_dir, f'seed{seed}')


def plan_sweeps(config: str, keys: Sequence[str], seeds: Sequence[int],
                values: Sequence[float], work_dir: str,
                cfg_options: Sequence[str] = ()) -> Dict[int, Dict[float, Run]]:
    """``{seed: {value: Run}}``: every value trained and tested at every seed."""
    return {seed: {value: Run(config, value_dir(seed_dir(work_dir, seed), value),
                              [*cfg_options, *value_options(keys, value),
                               f'randomness.seed={seed}'],
                              name=f'seed {seed} prior {value:g}')
                   for value in values}
            for seed in seeds}


def run_row(run, prior):
    """Validation metrics (``read_val_metrics``) and the test F1 of a tested run."""
    metrics = read_val_metrics(run.work_dir)
    if metrics is None:
        raise RuntimeError(f'{run.work_dir}: no cell_metrics/val_per_image.json; the '
                           'config must validate at the end of training')
    value = dump_metric(read_metric_dump(run.report), TEST_F1)
    return dict(prior=prior, run_dir=run.work_dir, test_f1=math.nan if value is None
                else float(value), **metrics)


def agreement(row, chosen, band_info, band, f1_tolerance):
    """Whether a run trained at ``row['prior']`` agrees with the sweep: in the recall
    band by value and by its validation recall, and its test F1 against the choice's."""
    f1_gap = row['test_f1'] - chosen['test_f1']
    in_band_value = (band_info['low'] is not None
                     and band_info['low'] <= row['prior'] <= band_info['high'])
    in_band_recall = (band_info['recall'] is not None
                      and row['avg_recall'] >= band_info['recall'] - band - 1e-12)
    f1_agrees = f1_gap >= -f1_tolerance - 1e-12
    return dict(prior=row['prior'], val_recall=row['avg_recall'], test_f1=row['test_f1'],
                run_dir=row['run_dir'], in_band_value=in_band_value,
                in_band_recall=in_band_recall, f1_gap=f1_gap, f1_agrees=f1_agrees,
                agrees=in_band_value and f1_agrees)


def compare_seed(sweep_rows, estimate_row, provisional, band, f1_tolerance):
    """How the estimate, and the better of it and the provisional prior by Lee & Liu's
    criterion, compare with the sweep of one seed (see the module docstring).

    ``sweep_rows`` and ``estimate_row`` as :func:`run_row` gives them; ``provisional``
    is the sweep value the estimate was made from.
    """
    chosen = choose(sweep_rows)
    band_info = recall_band(sweep_rows, band)
    provisional_row = next(row for row in sweep_rows if row['prior'] == provisional)
    try:
        pair = [dict(provisional_row), dict(estimate_row)]
        pu_pick = choose_by_pu_criterion(pair)
        pu_choice = dict(run='estimate' if pu_pick is pair[1] else 'provisional',
                         **agreement(pu_pick, chosen, band_info, band, f1_tolerance))
    except RuntimeError:  # neither run detects a labeled validation cell
        pu_choice = None
    hindsight = max(sweep_rows, key=lambda row: (row['test_f1'], -row['prior']))
    return dict(
        sweep={f'{row["prior"]:g}': dict(val_recall=row['avg_recall'],
                                         test_f1=row['test_f1'], run_dir=row['run_dir'])
               for row in sweep_rows},
        chosen=dict(prior=chosen['prior'], test_f1=chosen['test_f1']), band=band_info,
        estimate=agreement(estimate_row, chosen, band_info, band, f1_tolerance),
        pu_choice=pu_choice,
        provisional=dict(prior=provisional, test_f1=provisional_row['test_f1']),
        hindsight=dict(prior=hindsight['prior'], test_f1=hindsight['test_f1']))


def summarize(per_seed, num_values):
    """Test F1 mean ± std over the seeds of each way to the prior (those whose run has
    a test F1; no std for a single one), with its cost in trainings per seed, and on how
    many seeds the estimate and the PU-criterion choice agree with the sweep
    (:func:`agreement`)."""
    ways = (('provisional prior', 1, 'provisional'),
            ('sweep, recall choice', num_values, 'chosen'),
            ('estimate', 2, 'estimate'),
            ('provisional or estimate, PU criterion', 2, 'pu_choice'),
            ('best sweep value in hindsight (test)', num_values, 'hindsight'))
    seeds = list(per_seed.values())
    test_f1 = {}
    for name, cost, key in ways:
        values = [s[key]['test_f1'] for s in seeds
                  if s[key] is not None and not math.isnan(s[key]['test_f1'])]
        if values:
            mean, std = mean_std(values, undefined=None)
            test_f1[name] = dict(trainings=cost, seeds=len(values), mean=mean, std=std)
    counts = {key: {flag: sum(bool(s[key] and s[key][flag]) for s in seeds)
                    for flag in ('in_band_value', 'in_band_recall', 'f1_agrees', 'agrees')}
              for key in ('estimate', 'pu_choice')}
    return dict(test_f1=test_f1, seeds=len(seeds), **counts)


def _yes(flag):
    return 'yes' if flag else 'no'


def _agreement_cell(run):
    return (f'{_yes(run["in_band_value"])} / {_yes(run["in_band_recall"])}, '
            f'{run["f1_gap"]:+.3f}')


def format_markdown(results):
    """The per-seed table, the summary table and the agreement counts."""
    values = [f'{v:g}' for v in results['values']]
    head = ['seed', *(f'pi = {v}' for v in values), 'estimate', 'recall choice',
            'recall band', 'estimate: in band (value / recall), F1 - choice\'s',
            'PU criterion, provisional or estimate', 'its agreement']
    lines = [f'{results["config"]}, seeds {results["seeds"]}: validation average recall '
             f'/ test average F1. The estimate starts from the provisional prior '
             f'{results["provisional"]:g}: 2 trainings per seed; the sweep '
             f'{len(values)}.', '', '| ' + ' | '.join(head) + ' |',
             '|' + '---|' * len(head)]
    for seed, s in results['per_seed'].items():
        cells = [f'{s["sweep"][v]["val_recall"]:.3f} / {s["sweep"][v]["test_f1"]:.3f}'
                 for v in values]
        e, band, pu = s['estimate'], s['band'], s['pu_choice']
        lines.append('| ' + ' | '.join([
            seed, *cells,
            f'{e["prior"]:.3g}: {e["val_recall"]:.3f} / {e["test_f1"]:.3f}',
            f'{s["chosen"]["prior"]:g} ({s["chosen"]["test_f1"]:.3f})',
            f'{band["low"]:g}-{band["high"]:g}' if band['values'] else '-',
            _agreement_cell(e),
            '-' if pu is None else f'{pu["run"]} {pu["prior"]:.3g} ({pu["test_f1"]:.3f})',
            '-' if pu is None else _agreement_cell(pu)]) + ' |')
    summary, n = results['summary'], results['summary']['seeds']
    lines += ['', 'Test average F1, mean ± std over the seeds:', '',
              '| way to the prior | trainings per seed | seeds | test F1 |',
              '|---|---|---|---|']
    for name, row in summary['test_f1'].items():
        spread = '' if row['std'] is None else f' ± {row["std"]:.3f}'
        lines.append(f'| {name} | {row["trainings"]} | {row["seeds"]} | '
                     f'{row["mean"]:.3f}{spread} |')
    lines.append('')
    for key, name in (('estimate', 'The estimate'),
                      ('pu_choice', 'The PU-criterion choice')):
        c = summary[key]
        lines.append(
            f'{name}: in the recall band (within {results["band"]:g}) by value '
            f'{c["in_band_value"]} of {n} seeds, by validation recall '
            f'{c["in_band_recall"]} of {n}; test F1 within {results["f1_tolerance"]:g} '
            f'of the recall choice\'s or above {c["f1_agrees"]} of {n}; both (band by '
            f'value) {c["agrees"]} of {n}.')
    return '\n'.join(lines) + '\n'


def run_study(config: str, seeds: Sequence[int], values: Sequence[float], work_dir: str,
              keys: Optional[Sequence[str]] = None, provisional: Optional[float] = None,
              band: float = 0.02, f1_tolerance: float = 0.02, jobs: int = 1,
              estimate_options: Sequence[str] = (), cfg_options: Sequence[str] = (),
              echo: Callable[[str], None] = print) -> dict:
    """Train the sweeps, estimate, train the estimates and compare, seed by seed.

    Args:
        config: the experiment config.
        seeds: training seeds.
        values: the sweep's priors (the provisional prior is added).
        work_dir: the study's folder.
        keys: the keys the sweep sets (default: found in the config).
        provisional: the prior the estimate starts from (default: the config's).
        band: the recall band's tolerance.
        f1_tolerance: the estimate agrees when its test F1 is at most this below the
            sweep choice's.
        jobs: runs side by side.
        estimate_options: passed to ``tools/estimate_prior.py``.
        cfg_options: options of every training, test and estimate.
        echo: progress messages.

    Returns:
        dict: the content of ``results.json``.
    """
    cfg, keys = sweep_keys(config, cfg_options, keys)
    provisional = float(get_key(cfg, keys[0]) if provisional is None else provisional)
    values = sorted(set(values) | {provisional})
    sweeps = plan_sweeps(config, keys, seeds, values, work_dir, cfg_options)
    run_all([run for runs in sweeps.values() for run in runs.values()], jobs, echo=echo)
    estimates, estimate_runs = {}, {}
    for seed in seeds:
        out = osp.join(seed_dir(work_dir, seed), 'prior.json')
        estimates[seed] = existing_estimate(out) or estimate_run(
            sweeps[seed][provisional], out, estimate_options)
        echo(f'seed {seed}: estimate {estimates[seed].prior:g} ({out})')
        estimate_runs[seed] = Run(
            config, osp.join(seed_dir(work_dir, seed), 'estimate'),
            [*cfg_options, *estimates[seed].cfg_options, f'randomness.seed={seed}'],
            name=f'seed {seed} estimate')
    run_all(list(estimate_runs.values()), jobs, echo=echo)
    per_seed = {
        str(seed): compare_seed(
            [run_row(run, value) for value, run in sweeps[seed].items()],
            run_row(estimate_runs[seed], estimates[seed].prior), provisional, band,
            f1_tolerance)
        for seed in seeds}
    return dict(config=config, keys=keys, seeds=list(seeds), values=values,
                provisional=provisional, band=band, f1_tolerance=f1_tolerance,
                cfg_options=list(cfg_options), estimate_options=list(estimate_options),
                per_seed=per_seed, summary=summarize(per_seed, len(values)))


def write_study(work_dir: str, results: dict) -> str:
    """``results.md`` (:func:`format_markdown`) and ``results.json`` in ``work_dir``;
    returns the Markdown text."""
    text = format_markdown(results)
    write_results(work_dir, text, results)
    return text
