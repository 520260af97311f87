"""The own-data workflow's student retrained at other cuts, beside the fused detector.

Usage::

    python tools/distill_cut.py FIT_DIR --cuts 0.2 0.1 [--soft | --band-from S] [--jobs N]

``FIT_DIR``: a finished ``tools/fit_prior.py`` work dir (its default ``--final
distilled``). For each cut, the fit's student is trained again from the same round on
the fused detections scoring at least the cut (``FIT_DIR/distill_cut<cut>/``); the
table (F1 at 0.5, F1 at the validation threshold, AP, recall ceiling, and on a benchmark
config the precision and recall of what each student learned against the complete
labels) of the fused detector, the fit's student and each cut is printed and written to
``FIT_DIR/distill_cut.md`` and ``.json``. Runs resume. :mod:`studies.distill_cut`
documents the details.
"""
import argparse
import os.path as osp
import sys
from pathlib import Path

from cellio.cli import RUN_ERRORS, report_user_errors
from mmdet_pu.workflow.runs import check_run_arguments

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's studies/

from studies.distill_cut import run_study, write_study  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Retrain a fit's distilled student at other cuts",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument('fit_dir', help='a finished tools/fit_prior.py work dir')
    parser.add_argument('--cuts', type=float, nargs='+', required=True,
                        help='fused scores from which the student learns the detections')
    parser.add_argument('--soft', action='store_true',
                        help='teach each detection from the cut on as a cell weighted '
                             'by its score (soft targets), no band ignored')
    parser.add_argument('--band-from', type=float, default=None,
                        help='ignore the fused detections from this score up to the cut '
                             '(default: 0.1, or a tenth of a cut at or below it)')
    parser.add_argument('--jobs', type=int, default=1,
                        help='runs side by side (each gets cores/jobs threads)')
    args = parser.parse_args(argv)
    if not osp.isfile(osp.join(args.fit_dir, 'fit_prior.json')):
        parser.error(f'{args.fit_dir}: no fit_prior.json; expected the work dir of a '
                     'finished tools/fit_prior.py')
    for cut in args.cuts:
        if not 0 < cut < 1:
            parser.error(f'cut {cut:g}: expected a score in (0, 1)')
    if args.band_from is not None:
        if args.soft:
            parser.error('--band-from: a soft student ignores no band')
        if not 0 < args.band_from < min(args.cuts):
            parser.error(f'--band-from {args.band_from:g}: expected a score in (0, '
                         f'{min(args.cuts):g}), below every cut')
    check_run_arguments(parser, args.jobs, [], cuts=args.cuts)
    return args


def main(argv=None):
    args = parse_args(argv)
    rows = run_study(args.fit_dir, args.cuts, jobs=args.jobs, soft=args.soft,
                     band_from=args.band_from,
                     echo=lambda msg: print(f'[distill_cut] {msg}', flush=True))
    print(f'\n{write_study(args.fit_dir, rows)}\n[distill_cut] wrote '
          f'{args.fit_dir}/distill_cut.md and distill_cut.json')
    return rows


if __name__ == '__main__':
    sys.exit(report_user_errors(main, errors=RUN_ERRORS))
