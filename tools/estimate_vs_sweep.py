"""Does the estimated prior replace the sweep? Both, over seeds, side by side.

Usage::

    python tools/estimate_vs_sweep.py CONFIG --seeds 0 1 2 --values V1 V2 ... \\
        [--provisional P0] [--band 0.02] [--f1-tolerance 0.02] [--jobs N] \\
        [--work-dir DIR] [--key KEY ...] [--estimate-options="ARGS"] \\
        [--cfg-options KEY=VALUE ...]

Per seed, in ``DIR/seed<K>/`` (default ``DIR``:
``work_dirs/<config name>_estimate_vs_sweep``): a training and test per value of
``--values`` (the sweep), ``tools/estimate_prior.py`` (with ``--estimate-options``) on
the checkpoint of the provisional value ``--provisional`` (default: the config's own
prior), and a training and test with the estimate. Reported per seed and over the seeds:
the sweep's choice by validation recall and its recall band, whether the estimate and
Lee & Liu's choice between it and the provisional prior agree with the sweep (in the
band, test F1 within ``--f1-tolerance`` of the choice's), and the test F1 of each way to
the prior. Runs go ``--jobs`` at a time and are resumable. Written to ``DIR``:
``results.md`` (printed too) and ``results.json``.
:mod:`studies.prior_versus` documents the details.
"""
import argparse
import os.path as osp
import shlex
import sys
from pathlib import Path

from cellio.cli import RUN_ERRORS, report_user_errors
from mmdet_pu.prior.selection import add_selection_arguments
from mmdet_pu.workflow.runs import check_run_arguments, default_work_dir

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's studies/

from studies.prior_versus import run_study, write_study  # noqa: E402


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
    args.work_dir = args.work_dir or default_work_dir(args.config, '_estimate_vs_sweep')
    return args


def main(argv=None):
    args = parse_args(argv)
    results = run_study(
        args.config, args.seeds, args.values, args.work_dir, args.keys,
        args.provisional, args.band, args.f1_tolerance, args.jobs,
        args.estimate_options, args.cfg_options,
        echo=lambda msg: print(f'[estimate_vs_sweep] {msg}', flush=True))
    text = write_study(args.work_dir, results)
    print(f'\n{text}\n[estimate_vs_sweep] wrote {args.work_dir}/results.md and '
          'results.json')
    return results


if __name__ == '__main__':
    sys.exit(report_user_errors(main, errors=RUN_ERRORS))
