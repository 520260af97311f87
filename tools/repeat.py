"""Repeated runs: train and test configs over seeds (and folds), then compare them.

Usage::

    python tools/repeat.py CONFIG [CONFIG ...] --seeds 0 1 2 3 4 [--folds 0 1 2 3 4]
        [--names NAME ...] [--ref NAME] [--untested NAME ...] [--work-dir DIR]
        [--jobs N] [--cfg-options k=v ...] [--dry-run]

Every config is trained (``tools/train.py``) and tested (``tools/test.py``) once per seed
(``--cfg-options randomness.seed=K``; the seed of training, not of the annotation
deletion, which keeps the config's own) and, with ``--folds``, per fold (the
``annotations/fold<k>/`` folder of every ``ann_file`` is replaced by the fold's). Each
run has its own work dir ``DIR/<config stem>/seed<K>[_fold<F>]`` (default ``DIR``:
``work_dirs/repeat``); ``--jobs`` runs go side by side with cores/jobs threads each
(:mod:`mmdet_pu.apis.runs`).

Resumable: a run with its test dump ``cell_metrics/test_per_image.json`` is not run
again, a trained but untested run is only tested and an interrupted training resumes
from its last checkpoint, so the same command continues an interrupted experiment and,
once every run is tested, only recomputes the statistics. ``--dry-run`` prints one
shell line per run that is not tested yet (for a cluster scheduler) and runs nothing;
the same command without ``--dry-run`` then collects the results.

Statistics (:mod:`mmdet_pu.evaluation.comparison`, as ``tools/compare.py``): per method
(``--names``, default the config stems) mean ± std (ddof=1) over the runs of the
average recall, precision and F1 per class (plus their mean over classes for several
classes); every method except ``--ref`` (default: the first) and the ``--untested``
ones is compared with ``--ref`` by paired t-tests over the runs (seed K, fold F with
seed K, fold F), Benjamini-Hochberg corrected over the table. Written to ``DIR``:
``results.md`` (the table), ``results.json`` (means, stds, adjusted p-values and every
run's values) and ``results.png`` (mean ± std bars with one dot per run).

Examples::

    # the synthetic comparison over 5 seeds, two trainings at a time
    python tools/repeat.py configs/synthetic/synthetic_keep1_{ce,naive_pu,pu}.py \\
        --seeds 0 1 2 3 4 --names CE "naive PU" PU --ref PU --jobs 2
    # the paper's MITOS-ATYPIA-14 5-fold table, 3 seeds per fold, on a cluster
    python tools/repeat.py configs/pu/mitos14_vgg16_keep1_pu.py \\
        configs/baselines/mitos14_vgg16_keep1_{ce,bde}.py configs/baselines/\\
    mitos14_vgg16_upper_bound.py --seeds 0 1 2 --folds 0 1 2 3 4 --untested \\
        mitos14_vgg16_upper_bound --dry-run > jobs.sh

Training validates whenever the config says so (the paper's configs: once, at the end);
``--cfg-options val_cfg=None val_dataloader=None val_evaluator=None`` skips it.
"""
import argparse
import io
import json
import os
import os.path as osp
import sys
from pathlib import Path

from mmengine.config import Config

from mmdet_pu.apis.runs import Run, check_run_arguments, fold_options, run_all, run_dir
from mmdet_pu.io.atomic import write_atomic
from mmdet_pu.evaluation.comparison import (OVERALL, build_table, draw_rates, footnote,
                                            format_markdown, load_runs, table_dict)
from mmdet_pu.launch import parse_cfg_options

TOOLS_DIR = Path(__file__).resolve().parent


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


def plan_runs(args):
    """``{method name: [Run per seed (x fold)]}`` in pairing order (seed, then fold)."""
    plan = {}
    for name, config in zip(args.names, args.configs):
        per_fold = {None: []}
        if args.folds:
            cfg = Config.fromfile(config, import_custom_modules=False)
            if args.cfg_options:
                cfg.merge_from_dict(parse_cfg_options(args.cfg_options))
            per_fold = {fold: fold_options(cfg, fold, config) for fold in args.folds}
            clash = {o.split('=')[0] for opts in per_fold.values() for o in opts} & {
                o.split('=')[0] for o in args.cfg_options}
            if clash:
                raise ValueError(f'--cfg-options {sorted(clash)}: set by --folds')
        plan[name] = [
            Run(config, run_dir(args.work_dir, config, seed, fold),
                [*args.cfg_options, *options, f'randomness.seed={seed}'],
                name=f'{name} seed {seed}' + ('' if fold is None else f' fold {fold}'),
                tools_dir=TOOLS_DIR)
            for seed in args.seeds for fold, options in per_fold.items()]
    return plan


def compare_runs(plan, ref, untested=()):
    """The comparison table over the runs of each method (see the module docstring)."""
    methods = [load_runs(name, [run.report for run in runs], overall=True)
               for name, runs in plan.items()]
    table, num_tests = build_table(methods, ref, untested)
    return methods, table, num_tests


def draw_results(table, methods, path, title):
    """One panel per class (and the mean over classes): mean ± std bars, run dots."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    classes = methods[0].classes
    fig, axes = plt.subplots(len(classes), 1, squeeze=False,
                             figsize=(max(6, 1.8 * len(methods) + 2), 3.6 * len(classes)))
    for ax, cls in zip(axes[:, 0], classes):
        draw_rates(ax, table, methods, cls,
                   title=f'{title}: {cls}' if len(classes) > 1 else title)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format='png', dpi=110)
    plt.close(fig)
    write_atomic(path, png.getvalue())


def write_results(args, plan, methods, table, num_tests):
    """``results.md``, ``results.json`` and ``results.png`` in the work dir; returns the
    Markdown text."""
    runs = len(args.seeds) * len(args.folds or [None])
    what = f'seeds {args.seeds}' + (f' x folds {args.folds}' if args.folds else '')
    note = footnote(methods, args.ref, False, num_tests, 'avg')
    text = (f'{runs} runs per method ({what}); test split, average over test images.\n\n'
            f'{format_markdown(table, methods, args.untested, show_p=True)}\n\n{note}\n')
    os.makedirs(args.work_dir, exist_ok=True)
    write_atomic(osp.join(args.work_dir, 'results.md'), text)
    results = dict(
        configs=dict(zip(args.names, args.configs)), seeds=args.seeds, folds=args.folds,
        ref=args.ref, untested=args.untested, cfg_options=args.cfg_options,
        stat='avg', classes=methods[0].classes, overall_class=(
            OVERALL if OVERALL in methods[0].classes else None),
        num_tests=num_tests, runs={name: [run.work_dir for run in runs]
                                   for name, runs in plan.items()},
        table=table_dict(table, methods))
    write_atomic(osp.join(args.work_dir, 'results.json'), json.dumps(results, indent=1))
    draw_results(table, methods, osp.join(args.work_dir, 'results.png'),
                 f'{runs} runs per method')
    return text


def main(argv=None):
    args = parse_args(argv)
    try:
        plan = plan_runs(args)
        runs = [run for method_runs in plan.values() for run in method_runs]
        if args.dry_run:
            for run in runs:
                run.check_record()
                line = run.shell_commands()
                if line:
                    print(line)
            return None
        run_all(runs, args.jobs, echo=lambda msg: print(f'[repeat] {msg}', flush=True))
        methods, table, num_tests = compare_runs(plan, args.ref, args.untested)
    except (ValueError, RuntimeError, FileNotFoundError) as e:
        sys.exit(f'[repeat] {e}')
    text = write_results(args, plan, methods, table, num_tests)
    print(f'\n{text}\n[repeat] wrote {args.work_dir}/results.md, results.json and '
          'results.png')
    return text


if __name__ == '__main__':
    main()
