"""The embedded demo: incomplete annotations hurt a detector, PU learning recovers.

``make demo`` runs ``python tools/demo.py --variant binary``, a preset of
``tools/repeat.py`` (:mod:`studies.demo`):

1. generates the synthetic H&E-like dataset (``data/synthetic_<variant>``, complete labels);
2. trains the slim CPU Faster R-CNN with each method of the variant on the incomplete
   (deleted) annotations, and the upper bound on the complete ones
   (``configs/synthetic/*.py``), once per seed (``--seeds``, default ``0 1 2``),
   ``--jobs`` runs side by side; pi is already chosen (``tools/sweep_prior.py``); one
   validation pass at the end selects a score threshold (``cell/pu_score_thr``; the
   tests use 0.5, docs/method.md#evaluation, unless ``--cfg-options
   test_evaluator.score_thr=val``);
3. evaluates every run once on the whole test images with tiled inference
   (``tools/test.py``); the runs of the first seed also paint TP/FP/FN overlays;
4. prints per method the mean ± std over seeds of the average recall, precision and F1
   (per class too for ``multi``) and the gap closed by the mean F1, whether the PU method
   beats its comparison on F1 (binary: PU vs naive PU; multi: multi-class PU vs CE;
   paired t-test over seeds), and the table of F1 at 0.5, F1 at the validation threshold
   and AP with paired tests against the PU method; writes ``results.json``,
   ``results.md`` and ``figure.png`` into the work dir.

Each run has its own work dir ``<work dir>/<config stem>/seed<K>``, with its log
``run.log``. A second call reuses what is done; the same work dir with other options
(``--iters``, ``--cfg-options``, ``--data-root``) is refused: pass another
``--work-dir``. ``--variant multi`` runs the multi-class demo (MultiPULoss with class
priors estimated by ``tools/estimate_prior.py``, vs CE).
"""
import argparse
import os.path as osp
import sys
from pathlib import Path

from cellio.cli import RUN_ERRORS, report_user_errors
from mmdet_pu.workflow.runs import check_run_arguments

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's studies/

from studies.demo import PRESETS, run_demo  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--variant', choices=sorted(PRESETS), default='binary')
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
    check_run_arguments(parser, args.jobs, args.cfg_options, seeds=args.seeds)
    if args.iters is not None and args.iters < 1:
        parser.error('--iters must be >= 1')
    args.work_dir = args.work_dir or osp.join('work_dirs', f'demo_{args.variant}')
    args.data_root = args.data_root or osp.join('data', f'synthetic_{args.variant}')
    return args


def main(argv=None):
    args = parse_args(argv)
    text, results = run_demo(
        args.variant, args.work_dir, args.data_root, args.num_images, args.seeds,
        args.iters, args.jobs, args.cfg_options,
        echo=lambda msg: print(f'[demo] {msg}', flush=True))
    print(f'\n{text}\nTotal time {results["minutes"]:.1f} min.')
    print(f'[demo] wrote {args.work_dir}/results.json, results.md and figure.png')
    return results


if __name__ == '__main__':
    sys.exit(report_user_errors(main, errors=RUN_ERRORS))
