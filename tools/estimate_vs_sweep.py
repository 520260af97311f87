"""Does the estimated prior replace the sweep? Both, over seeds, side by side.

Usage::

    python tools/estimate_vs_sweep.py CONFIG --seeds 0 1 2 --values V1 V2 ... \\
        [--provisional P0] [--band 0.02] [--f1-tolerance 0.02] [--jobs N] \\
        [--work-dir DIR] [--key KEY ...] [--estimate-options="ARGS"] \\
        [--cfg-options KEY=VALUE ...]

Per seed K (``randomness.seed=K``), in ``DIR/seed<K>/`` (default ``DIR``:
``work_dirs/<config name>_estimate_vs_sweep``):

1. **the sweep**: one training and test per value of ``--values``, in ``prior_<value>/``,
   the value set at the keys ``tools/sweep_prior.py`` sets (``--key``, or found in the
   config);
2. **the estimate**: ``tools/estimate_prior.py`` (with ``--estimate-options``) on the
   checkpoint of the provisional value ``--provisional`` (default: the config's own
   prior; a sweep value, added to the values if missing), written to ``prior.json``;
3. one more training and test with the estimate's ``cfg_options`` (its recommendation:
   for a multi-class config the fixed class priors), in ``estimate/``.

The estimate costs two trainings (the provisional prior's and the estimate's), the sweep
one per value. Runs go ``--jobs`` at a time (:func:`mmdet_pu.apis.runs.run_all`) and
are resumable, as those of ``tools/repeat.py``; an existing ``prior.json`` is reused.

Reported per seed, from the runs' validation (``val_per_image.json``) and test
(``test_per_image.json``) dumps: validation average recall and test average F1 of
every run; the sweep's choice by validation average recall (the paper's criterion,
ties to the smaller prior) and its **recall band**, the values whose validation recall
is within ``--band`` of the best (:mod:`mmdet_pu.evaluation.prior_selection`); Lee &
Liu's choice between the provisional and the estimate run (``tools/sweep_prior.py
--select pu``, still two trainings; none when neither run detects a labeled validation
cell); and the sweep value with the best test F1 (hindsight, not a selection). For the
estimate and for that choice, whether it agrees with the sweep: in the band by value
(between the band's lowest and highest value, as ``tools/sweep_prior.py --estimate``
says it) and by its own run's validation recall (within ``--band`` of the sweep's
best), and its test F1 minus the choice's (agreeing when within ``--f1-tolerance`` or
above). Over the seeds: mean ± std (ddof=1) of the test F1 of each way to the prior
and the number of seeds that agree. Written to ``DIR``: ``results.md`` (printed too)
and ``results.json`` (every value).
"""
import argparse
import json
import math
import os
import os.path as osp
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
from mmengine.config import Config

from mmdet_pu.apis.prior_keys import find_prior_keys, get_key
from mmdet_pu.apis.runs import Run, available_cores, check_run_arguments, run_all, tool_env
from mmdet_pu.io.atomic import write_atomic
from mmdet_pu.evaluation.comparison import load_report, metric
from mmdet_pu.evaluation.prior_selection import (add_selection_arguments,
                                                 check_sweep_config, choose,
                                                 choose_by_pu_criterion, read_val_metrics,
                                                 recall_band)
from mmdet_pu.launch import parse_cfg_options

TOOLS_DIR = Path(__file__).resolve().parent
TEST_F1 = 'avg_f1'


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Train with the estimated prior and with a sweep, over seeds, and '
        'compare', formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument('config', help='experiment config file')
    parser.add_argument('--seeds', type=int, nargs='+', required=True,
                        help='training seeds (randomness.seed)')
    parser.add_argument('--values', type=float, nargs='+', required=True,
                        help='the sweep\'s priors')
    parser.add_argument('--provisional', type=float,
                        help='the prior the estimate starts from (default: the config\'s)')
    add_selection_arguments(parser)
    parser.add_argument('--f1-tolerance', type=float, default=0.02,
                        help='the estimate agrees when its test F1 is at most this '
                        'below the sweep choice\'s (default 0.02)')
    parser.add_argument('--estimate-options', type=shlex.split, default=[],
                        metavar='"ARGS"', help='passed to tools/estimate_prior.py, one '
                        'string: --estimate-options="--split val"')
    parser.add_argument('--work-dir', help='default: '
                        'work_dirs/<config name>_estimate_vs_sweep')
    parser.add_argument('--jobs', type=int, default=1,
                        help='runs side by side (each gets cores/jobs threads)')
    parser.add_argument('--cfg-options', nargs='+', default=[], metavar='KEY=VALUE',
                        help='passed to every training, test and estimate')
    args = parser.parse_args(argv)
    if not osp.isfile(args.config):
        parser.error(f'config {args.config} not found')
    check_run_arguments(parser, args.jobs, args.cfg_options, seeds=args.seeds,
                        values=args.values)
    for value in args.values + ([args.provisional] if args.provisional else []):
        if not 0 < value < 1:
            parser.error(f'prior {value:g}: expected a value in (0, 1)')
    if args.f1_tolerance < 0:
        parser.error(f'--f1-tolerance {args.f1_tolerance}: expected >= 0')
    if args.work_dir is None:
        stem = osp.splitext(osp.basename(args.config))[0]
        args.work_dir = osp.join('work_dirs', f'{stem}_estimate_vs_sweep')
    return args


def prior_keys_and_provisional(cfg, config_file, keys=None, provisional=None):
    """The keys the sweep sets (checked by :func:`check_sweep_config`) and the
    provisional prior (default: the config's)."""
    keys = keys or find_prior_keys(cfg)
    check_sweep_config(cfg, config_file, keys)
    return keys, float(get_key(cfg, keys[0]) if provisional is None else provisional)


def seed_dir(work_dir, seed):
    return osp.join(work_dir, f'seed{seed}')


def sweep_run(args, keys, seed, value):
    return Run(args.config, osp.join(seed_dir(args.work_dir, seed), f'prior_{value:g}'),
               [*args.cfg_options, *(f'{key}={value!r}' for key in keys),
                f'randomness.seed={seed}'],
               name=f'seed {seed} prior {value:g}', tools_dir=TOOLS_DIR)


def read_estimate(path):
    """``(value, cfg_options)`` of an estimate file: the recommended prior of the RoI
    stage (the anchor class's with several classes) and the options to train with;
    None when the file is missing or incomplete (an interrupted estimate)."""
    try:
        with open(path) as f:
            estimate = json.load(f)
        return float(estimate['recommended']['roi']), list(estimate['cfg_options'])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def run_estimate(args, provisional_run, out):
    """``tools/estimate_prior.py`` on the provisional run's checkpoint, into ``out``."""
    checkpoint = provisional_run.last_checkpoint()
    command = [sys.executable, str(TOOLS_DIR / 'estimate_prior.py'), args.config,
               checkpoint, '--out', out, *args.estimate_options,
               '--cfg-options', *provisional_run.options]
    log = osp.join(osp.dirname(out), 'estimate_prior.log')
    with open(log, 'w') as f:
        result = subprocess.run(command, env=tool_env(available_cores(), TOOLS_DIR),
                                stdout=f, stderr=subprocess.STDOUT)
    estimate = read_estimate(out)
    if result.returncode != 0 or estimate is None:
        with open(log, errors='replace') as f:
            tail = ''.join(f.readlines()[-20:])
        raise RuntimeError(f'tools/estimate_prior.py failed on {checkpoint} (exit '
                           f'{result.returncode}); log {log}:\n{tail}')
    return estimate


def run_row(run, prior):
    """Validation metrics (``read_val_metrics``) and the test F1 of a tested run."""
    metrics = read_val_metrics(run.work_dir)
    if metrics is None:
        raise RuntimeError(f'{run.work_dir}: no cell_metrics/val_per_image.json; the '
                           'config must validate at the end of training')
    value = metric(load_report(run.report), TEST_F1)
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


def mean_std(values):
    values = np.asarray(values, dtype=float)
    return dict(mean=float(values.mean()),
                std=float(values.std(ddof=1)) if len(values) > 1 else 0.0)


def summarize(per_seed, num_values):
    """Test F1 mean ± std over the seeds of each way to the prior, with its cost in
    trainings per seed, and on how many seeds the estimate and the PU-criterion choice
    agree with the sweep (:func:`agreement`)."""
    ways = (('provisional prior', 1, 'provisional'),
            ('sweep, recall choice', num_values, 'chosen'),
            ('estimate', 2, 'estimate'),
            ('provisional or estimate, PU criterion', 2, 'pu_choice'),
            ('best sweep value in hindsight (test)', num_values, 'hindsight'))
    seeds = list(per_seed.values())
    test_f1 = {}
    for name, cost, key in ways:
        values = [s[key]['test_f1'] for s in seeds if s[key] is not None]
        if values:
            test_f1[name] = dict(trainings=cost, seeds=len(values), **mean_std(values))
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
        lines.append(f'| {name} | {row["trainings"]} | {row["seeds"]} | '
                     f'{row["mean"]:.3f} ± {row["std"]:.3f} |')
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


def echo(message):
    print(f'[estimate_vs_sweep] {message}', flush=True)


def main(argv=None):
    args = parse_args(argv)
    try:
        cfg = Config.fromfile(args.config)
        cfg.merge_from_dict(parse_cfg_options(args.cfg_options))
        keys, provisional = prior_keys_and_provisional(cfg, args.config, args.keys,
                                                       args.provisional)
        values = sorted(set(args.values) | {provisional})
        sweeps = {seed: {value: sweep_run(args, keys, seed, value) for value in values}
                  for seed in args.seeds}
        run_all([run for runs in sweeps.values() for run in runs.values()], args.jobs,
                echo=echo)
        estimates, estimate_runs = {}, {}
        for seed in args.seeds:
            out = osp.join(seed_dir(args.work_dir, seed), 'prior.json')
            estimates[seed] = read_estimate(out) or run_estimate(
                args, sweeps[seed][provisional], out)
            echo(f'seed {seed}: estimate {estimates[seed][0]:g} ({out})')
            estimate_runs[seed] = Run(
                args.config, osp.join(seed_dir(args.work_dir, seed), 'estimate'),
                [*args.cfg_options, *estimates[seed][1], f'randomness.seed={seed}'],
                name=f'seed {seed} estimate', tools_dir=TOOLS_DIR)
        run_all(list(estimate_runs.values()), args.jobs, echo=echo)
        per_seed = {
            str(seed): compare_seed(
                [run_row(run, value) for value, run in sweeps[seed].items()],
                run_row(estimate_runs[seed], estimates[seed][0]), provisional,
                args.band, args.f1_tolerance)
            for seed in args.seeds}
    except (ValueError, RuntimeError, KeyError, FileNotFoundError) as error:
        sys.exit(f'[estimate_vs_sweep] {error}')
    results = dict(config=args.config, keys=keys, seeds=args.seeds, values=values,
                   provisional=provisional, band=args.band,
                   f1_tolerance=args.f1_tolerance, cfg_options=args.cfg_options,
                   estimate_options=args.estimate_options, per_seed=per_seed,
                   summary=summarize(per_seed, len(values)))
    text = format_markdown(results)
    os.makedirs(args.work_dir, exist_ok=True)
    write_atomic(osp.join(args.work_dir, 'results.md'), text)
    write_atomic(osp.join(args.work_dir, 'results.json'), json.dumps(results, indent=1))
    print(f'\n{text}\n[estimate_vs_sweep] wrote {args.work_dir}/results.md and '
          'results.json')
    return results


if __name__ == '__main__':
    main()
