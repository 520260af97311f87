"""Grid search of the class prior pi on the validation set (paper Section 2.3,
docs/method.md#prior-selection).

Usage::

    python tools/sweep_prior.py CONFIG (--values V [V ...] | --range START STOP STEP
        | --estimate FILE.json [--width W] [--num N] [--values V ...])
        [--select recall|pu] [--band B] [--key KEY [--key KEY ...]] [--work-dir DIR]
        [--jobs N] [--dry-run] [--force] [--cfg-options k=v ...]

One training per value (``DIR/prior_<value>``, default ``DIR``:
``work_dirs/<config name>_prior_sweep``), each ending with a validation pass; the value
with the best validation average recall (``--select pu``: Lee & Liu's criterion) is
chosen; ``DIR/sweep.csv``, ``sweep.png`` and ``chosen.json`` are written. A value with
validation results is not trained again (unless ``--force``); ``--dry-run`` prints the
training commands of the others (for a cluster scheduler) and the same command without
it then collects the results. ``--estimate`` sweeps ``--num`` values at relative spacing
``--width`` around the prior ``tools/estimate_prior.py`` recommends, with the estimate's
other options. Without ``--key``: the ``PriorUpdateHook``'s ``anchor_prior``, else the
RoI head's ``PULoss`` prior and every ``PULoss`` prior holding the same value (a
per-stage RPN prior is kept). :mod:`studies.prior_sweep` documents the
details.
"""
import argparse
import sys
from pathlib import Path

from cellio.cli import RUN_ERRORS, report_user_errors
from mmdet_pu.prior.selection import add_selection_arguments
from mmdet_pu.workflow.runs import check_run_arguments, default_work_dir

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's studies/

from studies.prior_sweep import (SELECTIONS, dry_run, format_summary,  # noqa: E402
                                 plan_sweep, run_sweep, setup_sweep)


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
    parser.add_argument('--jobs', type=int, default=1,
                        help='trainings side by side (each gets cores/jobs threads)')
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
    check_run_arguments(parser, args.jobs, [])  # a sweep keeps the config's seed
    args.width = 0.2 if args.width is None else args.width
    args.num = 3 if args.num is None else args.num
    args.work_dir = args.work_dir or default_work_dir(args.config, '_prior_sweep')
    return args


def main(argv=None):
    args = parse_args(argv)
    setup = setup_sweep(args.config, args.values, args.range, args.estimate, args.width,
                        args.num, args.keys, args.cfg_options,
                        echo=lambda msg: print(f'[sweep] {msg}', file=sys.stderr))
    if args.dry_run:
        for line in dry_run(plan_sweep(args.config, setup.grid, setup.keys, args.work_dir,
                                       setup.cfg_options), args.force):
            print(line)
        return None
    rows, summary = run_sweep(args.config, setup.grid, setup.keys, args.work_dir,
                              setup.cfg_options, args.select, args.band, args.force,
                              args.jobs, setup.estimate,
                              echo=lambda msg: print(f'[sweep] {msg}', flush=True))
    for line in format_summary(rows, summary, args.select):
        print(f'[sweep] {line}')
    print(f'[sweep] see {args.work_dir}/chosen.json')
    return summary


if __name__ == '__main__':
    sys.exit(report_user_errors(main, errors=RUN_ERRORS))
