"""The embedded demo: incomplete annotations hurt a detector, PU learning recovers.

``make demo`` runs ``python tools/demo.py --variant binary``:

1. generates the synthetic H&E-like dataset (``data/synthetic_<variant>``, complete labels);
2. trains the slim CPU Faster R-CNN with each method of the variant on the incomplete
   (deleted) annotations, and the upper bound on the complete ones
   (``configs/synthetic/*.py``, ``tools/train.py``), several runs side by side;
3. evaluates every run on the whole test images with tiled inference
   (``tools/test.py``, ``TiledTestLoop`` + ``CellDetMetric``) and paints TP/FP/FN overlays;
4. prints the paper-style table (recall, precision, F1 per class, gap closed) and writes
   ``results.json``, ``results.md`` and ``figure.png`` (bar chart + one overlay per
   method) into the work dir.

``--variant multi`` runs the multi-class demo (MultiPULoss + PriorUpdateHook vs CE).
"""
import argparse
import json
import os
import os.path as osp
import re
import subprocess
import sys
import time
from pathlib import Path

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
ITER_RE = re.compile(r'Iter\(train\)\s*\[\s*(\d+)/(\d+)\].*?\bloss: ([\d.]+)')


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--variant', choices=sorted(METHODS), default='binary')
    parser.add_argument('--work-dir', help='default: work_dirs/demo_<variant>')
    parser.add_argument('--data-root', help='default: data/synthetic_<variant>')
    parser.add_argument('--num-images', type=int, default=60,
                        help='synthetic whole images (512 px) to generate')
    parser.add_argument('--iters', type=int, help='training iterations per run '
                        '(default: the configs\' schedule)')
    parser.add_argument('--jobs', type=int, default=2,
                        help='trainings run side by side (each gets cores/jobs threads)')
    parser.add_argument('--cfg-options', nargs='+', default=[],
                        help='extra --cfg-options passed to every run')
    return parser.parse_args()


def prepare_data(variant, data_root, num_images):
    marker = osp.join(data_root, 'annotations', 'fold0', 'train.json')
    if osp.isfile(marker):
        print(f'[demo] data: {data_root} (already prepared)')
        return
    print(f'[demo] generating {num_images} synthetic {variant} images into {data_root}')
    subprocess.run([sys.executable, 'data_prep/prepare.py', 'synthetic', '--variant', variant,
                    '--out', data_root, '--num-images', str(num_images), '--seed', '0'],
                   cwd=REPO, check=True)


def data_options(data_root):
    root = data_root.rstrip('/') + '/'
    return [f'{loader}.dataset.data_root={root}'
            for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader')]


class Run:
    """One method: train, then test, each a subprocess of the repo's tools."""

    def __init__(self, name, config, role, work_dir):
        self.name, self.config, self.role = name, config, role
        self.work_dir = osp.join(work_dir, Path(config).stem)
        self.test_dir = osp.join(self.work_dir, 'test')
        self.log = osp.join(self.work_dir, 'demo.log')
        self.stage, self.proc = 'pending', None
        self.started = self.train_seconds = None
        self.metrics = None

    def _spawn(self, args, threads):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), PYTHONPATH=str(REPO))
        with open(self.log, 'a') as log:
            self.proc = subprocess.Popen([sys.executable, *args], cwd=REPO, env=env,
                                         stdout=log, stderr=subprocess.STDOUT)

    def start(self, train_options, test_options, threads):
        """Start training; :meth:`poll` starts the test when it is done."""
        os.makedirs(self.work_dir, exist_ok=True)
        self.test_options, self.threads = test_options, threads
        self.stage, self.started = 'train', time.time()
        self._spawn(['tools/train.py', self.config, '--work-dir', self.work_dir,
                     '--cfg-options', *train_options], threads)

    def poll(self):
        """Advance the run; returns True once it is tested."""
        if self.proc.poll() is None:
            return False
        if self.proc.returncode != 0:
            with open(self.log, errors='replace') as f:
                tail = f.read()[-4000:]
            sys.exit(f'[demo] {self.stage} of {self.name} failed (log {self.log}):\n{tail}')
        if self.stage == 'train':
            self.train_seconds = time.time() - self.started
            print(f'[demo] {self.name} trained in {self.train_seconds / 60:.1f} min; '
                  'testing with tiled inference on the whole test images', flush=True)
            with open(osp.join(self.work_dir, 'last_checkpoint')) as f:
                checkpoint = f.read().strip()
            self.stage = 'test'
            self._spawn(['tools/test.py', self.config, checkpoint, '--work-dir',
                         self.test_dir, '--show-dir', 'overlays', '--cfg-options',
                         *self.test_options], self.threads)
            return False
        self.stage, self.metrics = 'done', self._test_metrics()
        return True

    def progress(self):
        """A short status: training iteration and loss, or the stage."""
        if self.stage != 'train':
            return f'{self.name} {self.stage}'
        with open(self.log, errors='replace') as f:
            matches = ITER_RE.findall(f.read())
        if not matches:
            return f'{self.name} starting'
        iteration, total, loss = matches[-1]
        return f'{self.name} {iteration}/{total} loss {loss}'

    def _test_metrics(self):
        """The test metrics dumped by ``CellDetMetric`` (undefined values are null)."""
        dump = Path(self.test_dir, 'cell_metrics', 'test_per_image.json')
        return json.loads(dump.read_text())['metrics']


def run_all(runs, train_options, test_options, jobs):
    """Train and test every run, ``jobs`` at a time, printing progress."""
    threads = max(1, (os.cpu_count() or 1) // jobs)
    pending, active, last_print = list(runs), [], time.time()
    while pending or active:
        while pending and len(active) < jobs:
            run = pending.pop(0)
            print(f'[demo] training {run.name}: {run.config}', flush=True)
            run.start(train_options, test_options, threads)
            active.append(run)
        time.sleep(2)
        active = [run for run in active if not run.poll()]
        if active and time.time() - last_print > 30:
            last_print = time.time()
            print('[demo] ' + ' | '.join(run.progress() for run in active), flush=True)


def summarise(runs, metrics, classes):
    """Rows of the table and the gap closed by each method, from the test metrics."""
    def f1(name):
        return metrics[name]['cell/avg_f1'] or 0.0

    baseline = next(r.name for r in runs if r.role == 'baseline')
    upper = next(r.name for r in runs if r.role == 'upper_bound')
    gap = f1(upper) - f1(baseline)
    rows = []
    for run in runs:
        m = metrics[run.name]
        row = dict(method=run.name, config=run.config,
                   recall=m['cell/avg_recall'], precision=m['cell/avg_precision'],
                   f1=m['cell/avg_f1'], train_minutes=round(run.train_seconds / 60, 2))
        for c in classes if len(classes) > 1 else ():
            row[f'f1/{c}'] = m[f'cell/{c}/avg_f1']
        if run.role == 'method':
            row['gap_closed'] = (f1(run.name) - f1(baseline)) / gap if gap > 0 else None
        rows.append(row)
    return rows


def number(value):
    return '-' if value is None else f'{value:.3f}'


def markdown_table(rows, classes):
    per_class = [f'f1/{c}' for c in classes] if len(classes) > 1 else []
    head = ['method', 'recall', 'precision', 'F1', *[k.replace('f1/', 'F1 ') for k in per_class],
            'gap closed']
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for r in rows:
        gap = f"{100 * r['gap_closed']:.0f} %" if r.get('gap_closed') is not None else ''
        cells = [r['method'], *[number(r[k]) for k in ('recall', 'precision', 'f1', *per_class)],
                 gap]
        lines.append('| ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


def draw_figure(rows, runs, path):
    """Bar chart of recall / precision / F1 and one TP/FP/FN overlay per method."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    overlays = []
    for run in runs:
        found = sorted(Path(run.work_dir, 'test').glob('*/overlays/**/*.png'))
        overlays.append(found[0] if found else None)
    fig = plt.figure(figsize=(4 * len(runs), 8))
    ax = fig.add_subplot(2, 1, 1)
    width = 0.8 / 3
    for k, key in enumerate(('recall', 'precision', 'f1')):
        ax.bar([i + (k - 1) * width for i in range(len(rows))], [r[key] or 0 for r in rows],
               width, label=key)
    ax.set_xticks(range(len(rows)), [r['method'] for r in rows])
    ax.set_ylim(0, 1)
    ax.legend(ncol=3)
    ax.set_title('Synthetic cells, tiled whole-image evaluation')
    for i, (run, png) in enumerate(zip(runs, overlays)):
        sub = fig.add_subplot(2, len(runs), len(runs) + i + 1)
        if png is not None:
            sub.imshow(plt.imread(str(png)))
        sub.set_title(f'{run.name}\nTP green, FP red, FN yellow', fontsize=9)
        sub.axis('off')
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    args = parse_args()
    t0 = time.time()
    work_dir = args.work_dir or osp.join('work_dirs', f'demo_{args.variant}')
    data_root = args.data_root or osp.join('data', f'synthetic_{args.variant}')
    os.makedirs(work_dir, exist_ok=True)
    prepare_data(args.variant, data_root, args.num_images)

    # pi is already chosen (tools/sweep_prior.py, docs/experiments.md): no validation run
    options = data_options(data_root) + [
        'val_cfg=None', 'val_dataloader=None', 'val_evaluator=None'] + list(args.cfg_options)
    if args.iters:
        options.append(f'train_cfg.max_iters={args.iters}')
        options.append(f'train_cfg.val_interval={args.iters}')
        options.append(f'default_hooks.checkpoint.interval={args.iters}')
    runs = [Run(name, config, role, work_dir) for name, config, role in METHODS[args.variant]]
    run_all(runs, options, data_options(data_root), args.jobs)

    metrics = {run.name: run.metrics for run in runs}
    classes = sorted({k.split('/')[1] for m in metrics.values() for k in m
                      if k.count('/') == 2})
    rows = summarise(runs, metrics, classes)
    table = markdown_table(rows, classes)
    minutes = (time.time() - t0) / 60
    print(f'\n{table}\n\nTotal time {minutes:.1f} min. Gap closed = (F1 - F1 CE) / '
          '(F1 upper bound - F1 CE).')

    results = dict(variant=args.variant, data_root=data_root, minutes=round(minutes, 2),
                   rows=rows, metrics=metrics)
    with open(osp.join(work_dir, 'results.json'), 'w') as f:
        json.dump(results, f, indent=2)
    with open(osp.join(work_dir, 'results.md'), 'w') as f:
        f.write(table + '\n')
    draw_figure(rows, runs, osp.join(work_dir, 'figure.png'))
    print(f'[demo] wrote {work_dir}/results.json, results.md and figure.png')


if __name__ == '__main__':
    main()
