"""Grid search of the class prior pi on the validation set (paper Section 2.3,
docs/method.md#prior-selection).

Usage::

    python tools/sweep_prior.py CONFIG (--values V [V ...] | --range START STOP STEP
        | --estimate FILE.json [--width W] [--num N])
        [--select recall|pu] [--band B] [--key KEY [--key KEY ...]] [--work-dir DIR]
        [--dry-run] [--force]
        [--cfg-options k=v ...]

For every candidate value one model is trained with ``tools/train.py CONFIG --work-dir
DIR/prior_<value> --cfg-options KEY=<value> ...`` (every ``--key`` set to the value).
Training ends with a validation pass (mmengine validates after the last iteration or
epoch whenever the config has a val loop), in which ``CellDetMetric`` writes
``DIR/prior_<value>/cell_metrics/val_per_image.json``. The value with the best validation
**average recall** (``cell/avg_recall``, the mean over images and classes) is chosen,
as in the paper: precision is meaningless when validation labels are incomplete
(Section 2.3). Exact ties go to the smaller prior: a larger prior makes the detector
bolder, trading precision, which validation cannot measure, for recall.

Keys holding pi (docs/design.md): ``model.rpn_head.loss_cls.prior`` and
``model.roi_head.bbox_head.loss_cls.prior`` (binary PULoss) and
``custom_hooks.<i>.anchor_prior`` (pi_1 of the multi-class PriorUpdateHook). Without
``--key`` the tool uses the hook's key if the config has a ``PriorUpdateHook`` (it also
sets the other class priors and, unless its ``update_rpn_prior=False``, the RPN prior),
otherwise the RoI head's ``PULoss`` prior together with every other ``PULoss`` prior in
``model`` that holds the same value. A config with a per-stage prior (an RPN prior that
differs from the RoI head's, docs/experiments.md "Per-stage priors") thus keeps its RPN
prior while the RoI prior is swept; a config with one pi for both stages (the paper's)
sweeps both.

``--estimate FILE.json`` sweeps narrowly around the prior that ``tools/estimate_prior.py``
recommends (its ``recommended.roi``): ``N`` values (default 3) at relative spacing ``W``
(default 0.2), ``estimate * (1 + k W)`` for ``k = -(N-1)/2, ..., (N-1)/2``, rounded to
three significant digits; values outside (0, 1) are left out. The relative spacing fits
priors of every scale: 0.2 gives 0.2 / 0.25 / 0.3 around 0.25 (the step of the
synthetic sweep) and 0.028 / 0.035 / 0.042 around 0.035 (the paper's MITOS step is
0.005). The estimate's other options (the estimated RPN prior, where the RPN has a
prior of its own) are passed to every run before ``--cfg-options``, which can override
them, and are kept in ``chosen.json``; the key the estimate is for must be among the
swept keys. ``--values`` adds values to that grid: ``--estimate FILE.json --num 1
--values P0 --select pu``, where P0 is the provisional prior whose run the estimate was
made from (already in the work dir, so it is reused), trains once more, with the
estimate, and keeps the better of the two by the PU criterion: two trainings in all
(docs/experiments.md, "Training with the estimate"). A reused run keeps the options it
was trained with, and ``chosen.json`` gives those of the chosen run (read from the
config that mmengine dumped in its folder).

Runs are sequential. ``--dry-run`` prints one training command per value instead (for
a cluster scheduler); once those jobs have finished, the same command without
``--dry-run`` collects their results: a value whose ``val_per_image.json`` exists is
not trained again (unless ``--force``).

``--select pu`` chooses instead by Lee & Liu's criterion r^2 / Pr[f(x) = 1] (ICML 2003;
``mmdet_pu/evaluation/score_threshold.py``), computed from the same validation pass at
its score threshold: r is the recall of the labeled cells and Pr[f(x) = 1] the
detections per image, so the criterion grows with r * precision without knowing how
many cells are unannotated (with several classes: each class's criterion divided by
its maximum over the values, then the mean; ties go to the smaller prior). Recall alone
cannot see the false positives of a bolder detector and keeps rising with the prior;
the criterion can (docs/experiments.md, "Training with the estimate"). The default,
``--select recall``, is the paper's.

The **recall band** is the set of values whose validation average recall is within
``--band`` (default 0.02) of the best: the priors the validation data cannot tell
apart from the chosen one. Its lowest and highest value bound the range in which an
estimate of the prior counts as agreeing with the sweep; with ``--estimate`` the tool
says whether the estimate lies in it.

Outputs in the work dir (each written atomically): ``sweep.csv`` (one row per value),
``sweep.png`` (validation recall, precision and F1 against the prior) and
``chosen.json`` (the chosen value, its keys, metrics, run dir and checkpoint, the recall
band and, with ``--estimate``, the estimate and whether it lies in the band).
"""
import argparse
import csv
import io
import json
import math
import os
import os.path as osp
import shlex
import subprocess
import sys

import numpy as np
from mmengine.config import Config

from mmdet_pu.apis.prior_keys import find_prior_keys, get_key
from mmdet_pu.io.atomic import write_atomic
from mmdet_pu.evaluation.prior_selection import (COLUMNS, SELECTION_METRIC,
                                                 add_selection_arguments,
                                                 check_sweep_config, choose,
                                                 choose_by_pu_criterion, read_val_metrics,
                                                 recall_band)
from mmdet_pu.launch import parse_cfg_options

TRAIN_SCRIPT = osp.join(osp.dirname(osp.abspath(__file__)), 'train.py')
SELECTIONS = {'recall': f'cell/{SELECTION_METRIC} on the validation set',
              'pu': "Lee & Liu's r^2 / Pr[f(x) = 1] on the validation set"}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Select the class prior on the validation set',
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument('config', help='experiment config file')
    grid = parser.add_mutually_exclusive_group()
    grid.add_argument('--values', type=float, nargs='+', help='candidate priors (with '
                      '--estimate: added to its values)')
    grid.add_argument('--range', type=float, nargs=3, metavar=('START', 'STOP', 'STEP'),
                      help='candidates START, START+STEP, ..., STOP (inclusive)')
    parser.add_argument('--estimate', metavar='FILE.json',
                        help='sweep narrowly around the prior estimated by '
                        'tools/estimate_prior.py (its --out file)')
    parser.add_argument('--width', type=float, help='with --estimate: relative spacing '
                        'of the values (default 0.2)')
    parser.add_argument('--num', type=int, help='with --estimate: number of values '
                        '(default 3)')
    parser.add_argument('--select', choices=tuple(SELECTIONS), default='recall',
                        help='selection criterion: validation average recall (the '
                        "paper's, default) or Lee & Liu's PU criterion")
    add_selection_arguments(parser)
    parser.add_argument('--work-dir', help='sweep folder (default: '
                        'work_dirs/<config name>_prior_sweep)')
    parser.add_argument('--dry-run', action='store_true',
                        help='print the training commands, run nothing')
    parser.add_argument('--force', action='store_true',
                        help='retrain values that already have validation results')
    parser.add_argument('--cfg-options', nargs='+', default=[], metavar='KEY=VALUE',
                        help='passed to every training run (and used to read the '
                        'config here)')
    args = parser.parse_args(argv)
    if args.estimate is None and args.values is None and args.range is None:
        parser.error('give the candidates: --values, --range or --estimate')
    if args.estimate is not None and args.range is not None:
        parser.error('--range and --estimate do not combine (--values does)')
    if args.estimate is None and (args.width is not None or args.num is not None):
        parser.error('--width and --num need --estimate')
    args.width = 0.2 if args.width is None else args.width
    args.num = 3 if args.num is None else args.num
    if args.work_dir is None:
        stem = osp.splitext(osp.basename(args.config))[0]
        args.work_dir = osp.join('work_dirs', f'{stem}_prior_sweep')
    return args


def candidate_values(values=None, value_range=None):
    """The grid: explicit ``values``, or ``(start, stop, step)`` with ``stop`` included."""
    if values is not None:
        grid = [float(v) for v in values]
    else:
        start, stop, step = value_range
        if step <= 0 or stop < start:
            raise ValueError(f'--range {start} {stop} {step}: expected STEP > 0 and '
                             'STOP >= START')
        count = int(math.floor((stop - start) / step + 1e-9)) + 1
        grid = [round(start + i * step, 10) for i in range(count)]
    if len(set(grid)) != len(grid):
        raise ValueError(f'candidate priors repeat: {grid}')
    for value in grid:
        if not 0 < value < 1:
            raise ValueError(f'candidate prior {value}: expected 0 < prior < 1')
    return grid


def narrow_grid(center, width=0.2, num=3):
    """``num`` priors spaced ``width`` (relative) around ``center``, see the docstring."""
    if not 0 < center < 1:
        raise ValueError(f'estimated prior {center}: expected 0 < prior < 1')
    if width <= 0 or num < 1:
        raise ValueError(f'--width {width} --num {num}: expected W > 0 and N >= 1')
    values = [float(f'{center * (1 + (k - (num - 1) / 2) * width):.3g}')
              for k in range(num)]
    kept = [value for value in values if 0 < value < 1]
    if len(kept) < len(values):
        print(f'[sweep] left out priors outside (0, 1): '
              f'{sorted(set(values) - set(kept))}', file=sys.stderr)
    return kept


def read_estimate(path):
    """``(prior, key, options)`` from an estimate file of ``tools/estimate_prior.py``.

    ``prior`` is the recommended RoI-stage prior, ``key`` the config key it is for and
    ``options`` the file's other ``cfg_options`` (the per-stage RPN prior). For a
    multi-class config with a ``PriorUpdateHook`` the sweep varies the hook's
    ``anchor_prior``: the options are then the file's ``cfg_options_update_rule``, not
    its fixed per-class priors.
    """
    with open(path) as f:
        estimate = json.load(f)
    try:
        prior = estimate['recommended']['roi']
        key = estimate['stages']['roi']['key']
        options = estimate.get('cfg_options_update_rule', estimate['cfg_options'])
    except (KeyError, TypeError) as error:
        raise ValueError(f'{path}: no field {error} (expected the --out file of '
                         'tools/estimate_prior.py)') from None
    if not isinstance(prior, (int, float)):
        raise ValueError(f'{path}: recommended.roi = {prior!r}, expected a number')
    return float(prior), key, [o for o in options if not o.startswith(f'{key}=')]


def run_dir_of(work_dir, value):
    return osp.join(work_dir, f'prior_{value:g}')


def train_command(config, run_dir, keys, value, cfg_options):
    options = list(cfg_options) + [f'{key}={value!r}' for key in keys]
    return [sys.executable, TRAIN_SCRIPT, config, '--work-dir', run_dir,
            '--cfg-options', *options]


def trained_options(run_dir, config, options):
    """``options`` (``key=value``) with the values the run in ``run_dir`` was trained
    with, read from the config that mmengine dumped there; ``options`` unchanged when
    there is no dump (a run trained elsewhere)."""
    dump = osp.join(run_dir, osp.basename(config))
    if not options or not osp.exists(dump):
        return list(options)
    cfg = Config.fromfile(dump)
    return [f'{key}={get_key(cfg, key)!r}'
            for key in (option.split('=', 1)[0] for option in options)]


def last_checkpoint(run_dir):
    path = osp.join(run_dir, 'last_checkpoint')
    if not osp.exists(path):
        return None
    with open(path) as f:
        return f.read().strip()


def write_csv(path, rows):
    fields = ['prior', *COLUMNS] + (['pu_criterion'] if 'pu_criterion' in rows[0] else [])
    text = io.StringIO(newline='')
    writer = csv.DictWriter(text, fieldnames=[*fields, 'run_dir'])
    writer.writeheader()
    for row in rows:
        writer.writerow({k: row[k] for k in [*fields, 'run_dir']})
    write_atomic(path, text.getvalue())


def plot(path, rows, chosen, keys):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    priors = np.array([row['prior'] for row in rows])
    fig, ax = plt.subplots(figsize=(6, 4))
    for metric, label in (('avg_recall', 'average recall (selection)'),
                          ('avg_precision', 'average precision'),
                          ('avg_f1', 'average F1')):
        ax.plot(priors, [row[metric] for row in rows], marker='o', label=label)
    ax.axvline(chosen['prior'], color='grey', linestyle='--',
               label=f'chosen prior {chosen["prior"]:g}')
    ax.set_xlabel('prior ' + ', '.join(keys))
    ax.set_ylabel('validation value')
    ax.set_title('Prior sweep (validation labels may be incomplete)')
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format='png', dpi=120)
    plt.close(fig)
    write_atomic(path, png.getvalue())


def main(argv=None):
    args = parse_args(argv)
    fixed, center = [], None
    if args.estimate:
        center, estimate_key, fixed = read_estimate(args.estimate)
        grid = candidate_values(sorted(set(
            narrow_grid(center, args.width, args.num) + (args.values or []))))
        args.cfg_options = fixed + args.cfg_options
        print(f'[sweep] around the estimate {center:g} of {args.estimate}: {grid}',
              file=sys.stderr)
    else:
        grid = candidate_values(args.values, args.range)
    cfg = Config.fromfile(args.config)
    cfg.merge_from_dict(parse_cfg_options(args.cfg_options))
    keys = args.keys or find_prior_keys(cfg)
    check_sweep_config(cfg, args.config, keys)
    if args.estimate and estimate_key not in keys:
        raise ValueError(f'{args.estimate}: the estimate is for {estimate_key}, but the '
                         f'sweep sets {keys}')

    if args.dry_run:
        for value in grid:
            print(shlex.join(train_command(args.config, run_dir_of(args.work_dir, value),
                                           keys, value, args.cfg_options)))
        return None

    rows = []
    for value in grid:
        run_dir = run_dir_of(args.work_dir, value)
        metrics = None if args.force else read_val_metrics(run_dir)
        if metrics is None:
            command = train_command(args.config, run_dir, keys, value, args.cfg_options)
            print(f'[sweep] prior {value:g}: {shlex.join(command)}', flush=True)
            result = subprocess.run(command)
            if result.returncode != 0:
                raise RuntimeError(f'training for prior {value:g} failed (exit '
                                   f'{result.returncode}); see the log in {run_dir}')
            metrics = read_val_metrics(run_dir)
            if metrics is None:
                raise RuntimeError(f'prior {value:g}: training finished but wrote no '
                                   f'{run_dir}/cell_metrics/val_per_image.json')
        else:
            print(f'[sweep] prior {value:g}: reusing the results in {run_dir}')
        rows.append(dict(prior=value, run_dir=run_dir, **metrics))

    chosen = choose(rows) if args.select == 'recall' else choose_by_pu_criterion(rows)
    band = recall_band(rows, args.band)
    os.makedirs(args.work_dir, exist_ok=True)
    write_csv(osp.join(args.work_dir, 'sweep.csv'), rows)
    plot(osp.join(args.work_dir, 'sweep.png'), rows, chosen, keys)
    summary = dict(
        prior=chosen['prior'], keys=keys,
        selected_by=SELECTIONS[args.select],
        metrics={k: (None if math.isnan(chosen[k]) else chosen[k]) for k in COLUMNS},
        run_dir=chosen['run_dir'], checkpoint=last_checkpoint(chosen['run_dir']),
        cfg_options=trained_options(chosen['run_dir'], args.config, fixed)
        + [f'{key}={chosen["prior"]!r}' for key in keys],
        band=band)
    if args.select == 'pu':
        summary['pu_criterion'] = {f'{row["prior"]:g}': row['pu_criterion'] for row in rows}
    if center is not None:
        summary['estimate'] = dict(prior=center, file=args.estimate, in_band=(
            band['low'] is not None and band['low'] <= center <= band['high']))
    write_atomic(osp.join(args.work_dir, 'chosen.json'), json.dumps(summary, indent=1))
    columns = COLUMNS + (('pu_criterion',) if args.select == 'pu' else ())
    for row in rows:
        print(f'[sweep] prior {row["prior"]:g}: '
              + ', '.join(f'{k}={row[k]:.4f}' for k in columns))
    print(f'[sweep] chosen prior {chosen["prior"]:g} by {SELECTIONS[args.select]} '
          f'({SELECTION_METRIC} {chosen[SELECTION_METRIC]:.4f}); see '
          f'{args.work_dir}/chosen.json')
    if band['values']:
        print(f'[sweep] recall band (within {args.band:g} of the best): '
              f'{band["low"]:g} to {band["high"]:g} {band["values"]}')
    if center is not None:
        where = 'inside' if summary['estimate']['in_band'] else 'outside'
        print(f'[sweep] the estimate {center:g} lies {where} the recall band')
    return summary


if __name__ == '__main__':
    main()
