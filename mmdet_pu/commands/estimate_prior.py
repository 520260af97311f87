"""Estimate the class prior pi of each PU stage instead of sweeping it
(docs/method.md#prior-selection).

Usage (``tools/estimate_prior.py`` is the same command line)::

    python -m mmdet_pu.commands.estimate_prior CONFIG CKPT [--split train|val] [--num-images N]
        [--score-thr 0.5] [--oracle] [--out FILE.json] [--seed 0] [--device DEV]
        [--cfg-options k=v ...]

CKPT is a detector trained with a provisional prior (one training instead of one per
candidate). On the config's incompletely annotated images (the training split by
default, through the validation pipeline, with the config's deletion applied; ``--split
val`` takes the validation images; ``--num-images`` N images evenly spaced over the
split) the samples of both stages are drawn as training draws them and the priors
estimated (:mod:`mmdet_pu.prior.estimation`): in the RoI stage the risk-matched prior,
the one to train with, and the share of cells by the label frequency (detections with
``score >= --score-thr`` complete the labeled cells) and by best-bin estimation; in the
RPN the label frequency. ``--oracle`` also computes the shares with the complete
annotations of the annotation file (a check of the estimators on data whose files are
complete). The tool warns when the detector cannot support an estimate.

A dense config (RetinaNet, ATSS, GFL, RTMDet: the PU loss in ``model.bbox_head``) or a
Cascade R-CNN config gets the label frequency of every PU stage (the dense head; the RPN
and each RoI stage): the share of its samples that the labeled cells and the detections
make positive, counted with the stage's own assigner on the samples it draws
(:mod:`mmdet_pu.prior.label_frequency`); ``--oracle`` counts with the complete cells on
the same samples.

Output: a table on stdout and, with ``--out``, the estimate report
(:mod:`mmdet_pu.prior.estimate_file`) whose ``cfg_options`` train every stage at its
recommended estimate (``tools/train.py CONFIG --cfg-options ...``; with several classes
fixed class priors, ``cfg_options_update_rule`` for the Faster R-CNN ``PriorUpdateHook``'s
pi_1);
``tools/sweep_prior.py CONFIG --estimate FILE.json`` sweeps narrowly around it and
``tools/estimate_vs_sweep.py`` compares the estimate with a sweep over seeds.
"""
import argparse
import os.path as osp
import sys

from mmengine.config import DictAction

from cellio.cli import report_user_errors
from mmdet_pu.prior.estimate_file import format_table, write_estimate
from mmdet_pu.prior.from_checkpoint import estimate_from_checkpoint


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Estimate the class prior of each PU stage from a trained detector',
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument('config', help='experiment config file')
    parser.add_argument('checkpoint', help='detector trained with a provisional prior')
    parser.add_argument('--split', choices=('train', 'val'), default='train',
                        help='images to estimate on (default: train, the images whose '
                        'samples the loss sees)')
    parser.add_argument('--num-images', type=int, metavar='N',
                        help='use N images evenly spaced over the split (default: all)')
    parser.add_argument('--score-thr', type=float, default=0.5,
                        help='detections with this score or more complete the labeled '
                        'cells (default: 0.5, the paper\'s test threshold)')
    parser.add_argument('--oracle', action='store_true',
                        help='also report the shares with the complete annotations')
    parser.add_argument('--out', metavar='FILE.json', help='write the estimates here')
    parser.add_argument('--seed', type=int, default=0,
                        help='seed of the samplers (default: 0)')
    parser.add_argument('--device', default=None,
                        help='cuda or cpu (default: cuda when available)')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        metavar='KEY=VALUE', help='override settings of the config')
    args = parser.parse_args(argv)
    if args.num_images is not None and args.num_images < 1:
        parser.error(f'--num-images {args.num_images}: expected N >= 1')
    if not 0 <= args.score_thr <= 1:
        parser.error(f'--score-thr {args.score_thr}: expected a score in [0, 1]')
    return args


def main(argv=None):
    args = parse_args(argv)
    report = estimate_from_checkpoint(
        args.config, args.checkpoint, args.split, args.num_images, args.score_thr,
        args.oracle, args.seed, args.device, args.cfg_options)
    print(format_table(report))
    if args.out:
        write_estimate(args.out, report)
        print(f'estimates written to {osp.abspath(args.out)}')
    return report


if __name__ == '__main__':
    sys.exit(report_user_errors(main))
