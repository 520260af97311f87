"""The embedded demo: incomplete annotations hurt a detector, PU learning recovers.

``make demo`` runs ``python tools/demo.py --variant binary``:

1. generates the synthetic H&E-like dataset (``data/synthetic_<variant>``, complete labels);
2. trains the slim CPU Faster R-CNN with each method of the variant on the incomplete
   (deleted) annotations, and the upper bound on the complete ones
   (``configs/synthetic/*.py``), once per seed (``--seeds``, default ``0 1 2``;
   ``randomness.seed``), ``--jobs`` runs side by side through the scheduler of
   ``tools/repeat.py`` (:mod:`mmdet_pu.apis.runs`): a slot trains a run and then tests
   it, so the tests overlap the other trainings; pi is already chosen
   (``tools/sweep_prior.py``); one validation pass at the end selects a score
   threshold (``cell/pu_score_thr``; the tests use 0.5, docs/method.md#evaluation, unless
   ``--cfg-options test_evaluator.score_thr=val``);
3. evaluates every run once on the whole test images with tiled inference
   (``tools/test.py``, ``TiledTestLoop`` + ``CellDetMetric``); the runs of the first
   seed also paint TP/FP/FN overlays;
4. prints per method the mean ± std over seeds of the average recall, precision and F1
   (per class too for ``multi``) and the gap closed by the mean F1, and whether the PU
   method beats its comparison (binary: PU vs naive PU; multi: multi-class PU vs CE) on
   F1: paired t-test over seeds of :mod:`mmdet_pu.evaluation.comparison`
   (``tools/compare.py``'s statistics); writes ``results.json``, ``results.md`` and
   ``figure.png`` (mean ± std bars with one dot per seed + one overlay per method) into
   the work dir.

Each run has its own work dir ``<work dir>/<config stem>/seed<K>``, with its log
``run.log``. A second call reuses what is done (a tested run is not run again, an
interrupted one resumes); the same work dir with other options (``--iters``,
``--cfg-options``, ``--data-root``) is refused: pass another ``--work-dir``.
``--iters`` overrides the configs' schedule (default: the configs' own).

``--variant multi`` runs the multi-class demo (MultiPULoss with class priors estimated
from a provisional training with the PriorUpdateHook, vs CE).
"""
import argparse
import io
import json
import os
import os.path as osp
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from mmdet_pu.apis.runs import Run, run_all, run_dir
from mmdet_pu.io.atomic import write_atomic
from mmdet_pu.evaluation.comparison import (OVERALL, build_table, draw_rates, load_runs,
                                            table_dict)

REPO = Path(__file__).resolve().parents[1]

#: (name, config, role) per variant; the role places the run in the gap-closed formula.
METHODS = dict(
    binary=[
        ('CE baseline', 'configs/synthetic/synthetic_keep1_ce.py', 'baseline'),
        ('naive PU', 'configs/synthetic/synthetic_keep1_naive_pu.py', 'method'),
        ('PU', 'configs/synthetic/synthetic_keep1_pu.py', 'method'),
        ('upper bound', 'configs/synthetic/synthetic_upper_bound.py', 'upper_bound'),
    ],
    multi=[
        ('CE baseline', 'configs/synthetic/synthetic_multi_cap2_ce.py', 'baseline'),
        ('multi-class PU', 'configs/synthetic/synthetic_multi_cap2_mpu.py', 'method'),
        ('upper bound', 'configs/synthetic/synthetic_multi_upper_bound.py', 'upper_bound'),
    ])
#: (reference, compared method) of the significance line: the only paired test.
CLAIMS = dict(binary=('PU', 'naive PU'), multi=('multi-class PU', 'CE baseline'))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--variant', choices=sorted(METHODS), default='binary')
    parser.add_argument('--work-dir', help='default: work_dirs/demo_<variant>')
    parser.add_argument('--data-root', help='default: data/synthetic_<variant>')
    parser.add_argument('--num-images', type=int, default=60,
                        help='synthetic whole images (512 px) to generate')
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2],
                        help='training seeds, one run per method and seed (default 0 1 2)')
    parser.add_argument('--iters', type=int, help='training iterations per run '
                        '(default: the configs\' schedule)')
    parser.add_argument('--jobs', type=int, default=2,
                        help='runs side by side (each gets cores/jobs threads)')
    parser.add_argument('--cfg-options', nargs='+', default=[],
                        help='extra --cfg-options passed to every run')
    args = parser.parse_args(argv)
    if len(set(args.seeds)) != len(args.seeds):
        parser.error(f'--seeds repeat: {args.seeds}')
    if args.jobs < 1 or (args.iters is not None and args.iters < 1):
        parser.error('--jobs and --iters must be >= 1')
    args.work_dir = args.work_dir or osp.join('work_dirs', f'demo_{args.variant}')
    args.data_root = args.data_root or osp.join('data', f'synthetic_{args.variant}')
    return args


def prepare_data(variant, data_root, num_images):
    marker = osp.join(data_root, 'annotations', 'fold0', 'train.json')
    if osp.isfile(marker):
        print(f'[demo] data: {data_root} (already prepared)')
        return
    print(f'[demo] generating {num_images} synthetic {variant} images into {data_root}')
    subprocess.run([sys.executable, 'data_prep/prepare.py', 'synthetic', '--variant', variant,
                    '--out', osp.abspath(data_root), '--num-images', str(num_images),
                    '--seed', '0', '--no-progress'], cwd=REPO, check=True)


def run_options(args):
    """``--cfg-options`` of every run: the data and the iterations.

    Validation runs once, at the end: it selects a score threshold with the PU criterion
    (``cell/pu_score_thr``), which ``--cfg-options test_evaluator.score_thr=val`` tests
    with instead of 0.5.
    """
    root = args.data_root.rstrip('/') + '/'
    options = [f'{loader}.dataset.data_root={root}'
               for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader')]
    if args.iters:
        # the learning-rate step of schedules/cpu_short.py stays at 80 % of training
        options += [f'train_cfg.max_iters={args.iters}',
                    f'train_cfg.val_interval={args.iters}',
                    f'default_hooks.checkpoint.interval={args.iters}',
                    f'param_scheduler.0.milestones=[{max(1, int(0.8 * args.iters))}]']
    return options + list(args.cfg_options)


def plan_runs(args):
    """``{method name: [Run per seed]}``; the overlays come from the first seed."""
    options = run_options(args)
    return {name: [Run(REPO / config, run_dir(args.work_dir, config, seed),
                       [*options, f'randomness.seed={seed}'], name=f'{name} seed {seed}',
                       show_dir='overlays' if seed == args.seeds[0] else None,
                       tools_dir=REPO / 'tools')
                   for seed in args.seeds]
            for name, config, _ in METHODS[args.variant]}


def _mean(table, name, cls, rate):
    mean = table[(name, cls, rate)].mean
    return None if np.isnan(mean) else mean


def summarise(variant, plan, methods, table):
    """Rows of the table: mean and std over seeds, gap closed of the mean F1."""
    classes = methods[0].classes
    main_class = OVERALL if OVERALL in classes else classes[0]
    roles = {name: role for name, _, role in METHODS[variant]}
    configs = {name: config for name, config, _ in METHODS[variant]}
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
    ref, other = CLAIMS[variant]
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


def draw_figure(plan, methods, table, main_class, path):
    """Mean ± std bars with the seeds as dots, and one TP/FP/FN overlay per method."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

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
    png = io.BytesIO()
    fig.savefig(png, format='png', dpi=110)
    plt.close(fig)
    write_atomic(path, png.getvalue())


def main(argv=None):
    args = parse_args(argv)
    t0 = time.time()
    os.makedirs(args.work_dir, exist_ok=True)
    prepare_data(args.variant, args.data_root, args.num_images)

    plan = plan_runs(args)
    # seed-major order: an interrupted demo has every method of the first seeds
    runs = [plan[name][k] for k in range(len(args.seeds)) for name in plan]
    try:
        run_all(runs, args.jobs, echo=lambda msg: print(f'[demo] {msg}', flush=True),
                status_every=30)
    except (ValueError, RuntimeError) as e:
        sys.exit(f'[demo] {e}')

    ref, other = CLAIMS[args.variant]
    methods = [load_runs(name, [run.report for run in plan[name]], overall=True)
               for name in plan]
    table, num_tests = build_table(methods, ref, untested=[n for n in plan
                                                           if n not in (ref, other)])
    rows, main_class = summarise(args.variant, plan, methods, table)
    claim, claim_line = significance(args.variant, methods, table, num_tests, main_class)
    text = (f'{markdown_table(rows, methods[0].classes)}\n\n{claim_line}.\n\nMean ± std '
            f'over seeds {args.seeds} of the average over test images; gap closed = '
            '(F1 - F1 CE) / (F1 upper bound - F1 CE) of the mean F1.\n')
    minutes = (time.time() - t0) / 60
    print(f'\n{text}\nTotal time {minutes:.1f} min.')

    results = dict(variant=args.variant, data_root=args.data_root, seeds=args.seeds,
                   iters=args.iters, minutes=round(minutes, 2), rows=rows,
                   significance=claim, table=table_dict(table, methods),
                   runs={name: [run.work_dir for run in runs]
                         for name, runs in plan.items()},
                   metrics={name: [run.metrics for run in runs]
                            for name, runs in plan.items()})
    write_atomic(osp.join(args.work_dir, 'results.json'), json.dumps(results, indent=2))
    write_atomic(osp.join(args.work_dir, 'results.md'), text)
    draw_figure(plan, methods, table, main_class, osp.join(args.work_dir, 'figure.png'))
    print(f'[demo] wrote {args.work_dir}/results.json, results.md and figure.png')


if __name__ == '__main__':
    main()
