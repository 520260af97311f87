"""Repeated runs: train and test configs over seeds (and folds), then compare them.

Usage::

    python tools/repeat.py CONFIG [CONFIG ...] --seeds 0 1 2 3 4 [--folds 0 1 2 3 4]
        [--names NAME ...] [--ref NAME] [--untested NAME ...] [--work-dir DIR]
        [--jobs N] [--cfg-options k=v ...] [--dry-run]

Every config is trained and tested once per seed (``randomness.seed``, the seed of
training, not of the annotation deletion) and, with ``--folds``, per fold (every
``annotations/fold<k>/`` folder replaced by the fold's), each run in
``DIR/<config stem>/seed<K>[_fold<F>]`` (default ``DIR``: ``work_dirs/repeat``),
``--jobs`` runs side by side (:mod:`studies.repeat`). Resumable: a tested
run is not run again, a trained one is only tested, an interrupted training resumes, so
the same command continues an experiment and, once every run is tested, only recomputes
the statistics. A run tested under other test settings than the config's now (its
``model.test_cfg``, test data, evaluator or test loop changed since) is tested again on
its checkpoint, so the tables never pool results of two settings. ``--dry-run`` prints
one shell line per run not tested yet (for a cluster scheduler) and runs nothing.

Two tables (:mod:`studies.comparison`, as ``tools/compare.py``), each with
mean ± std (ddof=1) over the runs per method (``--names``, default the config stems)
and class (and the mean over classes), every method except ``--ref`` (default: the
first) and the ``--untested`` ones tested against ``--ref`` by paired t-tests over the
runs, Benjamini-Hochberg corrected over the table: average recall, precision and F1;
F1 at the test threshold, F1 at the threshold each run's validation selected, and AP.
Written to ``DIR``: ``results.md``, ``results.json`` and ``results.png``.

Example, the synthetic comparison over 5 seeds, two trainings at a time::

    python tools/repeat.py configs/synthetic/synthetic_keep1_{ce,naive_pu,pu}.py \\
        --seeds 0 1 2 3 4 --names CE "naive PU" PU --ref PU --jobs 2

Training validates whenever the config says so (the paper's configs: once, at the end);
``--cfg-options val_cfg=None val_dataloader=None val_evaluator=None`` skips it (the F1
at the validation threshold is then undefined).
"""
import argparse
import os.path as osp
import sys
from pathlib import Path

from cellio.cli import RUN_ERRORS, report_user_errors
from mmdet_pu.workflow.runs import check_run_arguments

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's studies/

from studies.repeat import (compare_runs, dry_run, plan_runs, run_plan,  # noqa: E402
                            write_results)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Train and test configs over seeds (and folds) and compare them',
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument('configs', nargs='+', metavar='CONFIG')
    parser.add_argument('--seeds', type=int, nargs='+', required=True,
                        help='training seeds (randomness.seed)')
    parser.add_argument('--folds', type=int, nargs='+',
                        help='folds (annotations/fold<k>/); default: the configs\' own')
    parser.add_argument('--names', nargs='+', help='method names, one per CONFIG '
                        '(default: the config stems)')
    parser.add_argument('--ref', help='reference method of the t-tests (default: the '
                        'first)')
    parser.add_argument('--untested', nargs='+', default=[], metavar='NAME',
                        help='methods shown but not tested (e.g. the upper bound)')
    parser.add_argument('--work-dir', default=osp.join('work_dirs', 'repeat'))
    parser.add_argument('--jobs', type=int, default=1,
                        help='runs side by side (each gets cores/jobs threads)')
    parser.add_argument('--cfg-options', nargs='+', default=[], metavar='KEY=VALUE',
                        help='passed to every training and test')
    parser.add_argument('--dry-run', action='store_true',
                        help='print the commands of the runs not tested yet, run nothing')
    args = parser.parse_args(argv)
    for config in args.configs:
        if not osp.isfile(config):
            parser.error(f'config {config} not found')
    args.names = args.names or [Path(c).stem for c in args.configs]
    if len(args.names) != len(args.configs):
        parser.error(f'{len(args.configs)} CONFIG arguments but {len(args.names)} '
                     '--names')
    if len(set(args.names)) != len(args.names):
        parser.error(f'--names must be distinct, got {args.names}')
    stems = [Path(c).stem for c in args.configs]
    if len(set(stems)) != len(stems):
        parser.error(f'the configs\' file names must differ (they name the work dirs), '
                     f'got {stems}')
    args.ref = args.ref or args.names[0]
    for name in [args.ref, *args.untested]:
        if name not in args.names:
            parser.error(f'{name!r} is not one of the methods {args.names}')
    check_run_arguments(parser, args.jobs, args.cfg_options, seeds=args.seeds,
                        folds=args.folds or [])
    return args


def main(argv=None):
    args = parse_args(argv)
    plan = plan_runs(args.names, args.configs, args.seeds, args.work_dir, args.folds,
                     args.cfg_options)
    if args.dry_run:
        for line in dry_run(plan):
            print(line)
        return None
    run_plan(plan, args.jobs, echo=lambda msg: print(f'[repeat] {msg}', flush=True))
    comparison = compare_runs(plan, args.ref, args.untested)
    text = write_results(args.work_dir, plan, comparison, args.configs, args.seeds,
                         args.folds, args.cfg_options)
    print(f'\n{text}\n[repeat] wrote {args.work_dir}/results.md, results.json and '
          'results.png')
    return text


if __name__ == '__main__':
    sys.exit(report_user_errors(main, errors=RUN_ERRORS))
