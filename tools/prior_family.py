"""Which prior rule holds across the family of synthetic regimes.

Usage::

    python tools/prior_family.py [--regimes keep1 sparse ...] [--seeds 0 1 2]
        [--work-dir DIR] [--jobs N] [--summary-only]

For each regime (:data:`studies.prior_family.REGIMES`; its data: the
config's ``prepare_cmd``): the provisional training per seed, the oracle shares, a
six-value grid of priors around them (odds factors 1/3 ... 9/4; all six at the first
seed, the central three at the others) and the shipped workflow of
``tools/fit_prior.py`` per seed, every run tested on the complete test labels. Written
to ``DIR`` (default ``work_dirs/prior_family``): ``results.md`` (per regime the grid, and
each rule's choice against the best grid value in hindsight: F1 at 0.5, F1 at the
validation threshold, AP) and ``results.json``. Resumable; ``--summary-only`` tabulates
what is there.
"""
import argparse
import os.path as osp
import sys
from pathlib import Path

from cellio.cli import RUN_ERRORS, report_user_errors
from mmdet_pu.workflow.runs import check_run_arguments

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's studies/

from studies.prior_family import (REGIMES, run_regime, summarize,  # noqa: E402
                                  write_family)

CONFIG_DIR = Path(__file__).resolve().parents[1] / 'configs' / 'synthetic'


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='The prior rules over the synthetic regimes',
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument('--regimes', nargs='+', choices=sorted(REGIMES),
                        default=['keep1', 'sparse', 'nuclei', 'small'])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--work-dir', default=osp.join('work_dirs', 'prior_family'))
    parser.add_argument('--jobs', type=int, default=2,
                        help='runs side by side (each gets cores/jobs threads)')
    parser.add_argument('--summary-only', action='store_true',
                        help='tabulate the finished runs, train nothing')
    args = parser.parse_args(argv)
    check_run_arguments(parser, args.jobs, [], seeds=args.seeds, regimes=args.regimes)
    return args


def main(argv=None):
    args = parse_args(argv)
    echo = lambda msg: print(f'[prior_family] {msg}', flush=True)  # noqa: E731
    if not args.summary_only:
        for regime in args.regimes:
            echo(f'regime {regime}')
            run_regime(regime, str(CONFIG_DIR), args.work_dir, args.seeds, args.jobs, echo)
    results = [summarize(regime, args.work_dir, args.seeds) for regime in args.regimes]
    text = write_family(args.work_dir, results)
    print(f'\n{text}\n[prior_family] wrote {args.work_dir}/results.md and results.json')
    return results


if __name__ == '__main__':
    sys.exit(report_user_errors(main, errors=RUN_ERRORS))
