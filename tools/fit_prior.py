"""Fit the class prior of a config to its own data in at most four trainings, and
return one detector (a fifth training; a sixth guards the classes of a multi-class
config).

Usage::

    python tools/fit_prior.py CONFIG [--work-dir DIR] [--factors 0.7 2] [--seed 0]
        [--no-self-train | --self-train-loss {pu,own}
         --final {self-trained,criterion,fused,distilled}]
        [--uncertain-score SCORE] [--self-train-init {scratch,chosen}]
        [--pseudo-labels-from {more,provisional,chosen,fused}]
        [--guard {auto,on,off}] [--no-box-fit] [--jobs N]
        [--cfg-options KEY=VALUE ...]

Trains the config (the provisional detector; a Faster R-CNN or Cascade R-CNN with box-fit
negatives, which ``--no-box-fit`` leaves out), estimates each stage's share of
cells from it on the training split (``tools/estimate_prior.py``; every stage of a
Faster R-CNN, Cascade R-CNN or dense config), trains once more per
``--factors`` value at the estimates scaled by it (in odds), and keeps the training with
the best Lee & Liu criterion on the validation split (recall^2 / detections per image);
then trains once more at that training's priors with confident detections on the
training split added as pseudo-labels (self-training): those of whichever of the
provisional detector and the chosen one gives more of them, each cut at its own
validation threshold (``--pseudo-labels-from provisional``, ``chosen``: that one's;
``fused``: the first trainings' fused into one detector; where that source scores no
unlabeled cell at its cut, the chosen detector's); ``--no-self-train`` leaves it out;
``--self-train-loss own`` trains that round with the detector's own classification
losses instead of the PU ones; ``--uncertain-score`` ignores in that round the
detections scored from it up to the pseudo-labels' threshold, learned neither as cells
nor as background; ``--self-train-init chosen`` fine-tunes the chosen detector instead
of training from the config's initialisation). It then fuses all the trainings into
one detector (``FusedEnsemble``, in ``fused/``: the self-trained detector has half the
vote, the first trainings share the other half by their criterion) and by default
returns one detector distilled from it (``distilled/``, one detector's inference cost):
the self-trained detector fine-tuned with its own loss on the fused detections above
their validation threshold (``distill_labels.json``; those from 0.1 up to it ignored),
read at 0.5. ``--final fused``: the fused detector itself (about as slow at inference
as the trainings together; it ranks better on some data, docs/experiments.md);
``--final self-trained``: the self-trained detector alone; ``--final criterion``: the
best of all by the same criterion. With several classes (``--guard auto``; ``on``
with one) the config also trains with the detector's own classification loss (the
reference, ``reference/``), and a class it ranks better on the labeled validation
cells (a paired bootstrap over the images, 95 %) is taken from it: the fit then returns
``guarded/``, its detector and the reference as one ``FusedEnsemble`` with votes per
class. No complete labels needed. Written to ``DIR`` (default
``work_dirs/<config name>_fit_prior``): ``fit_prior.pth`` (the chosen checkpoint),
``fit_prior_config.py`` (its config: ``tools/test.py``, ``tools/infer_slide.py`` take
the two), ``fit_prior.json`` (every training, the estimates, the choice and why;
``chosen_config`` with ``chosen_cfg_options`` tests the fused or distilled detector,
or trains a single chosen one again), ``pseudo_labels.json``, ``fit_prior.png``, and
one work dir per training. Rerun the same command to resume.
:mod:`mmdet_pu.workflow.prior_fit` documents the details; docs/experiments.md the
evidence.
"""
import argparse
import os.path as osp
import sys

from cellio.cli import RUN_ERRORS, positive_float, report_user_errors
from mmdet_pu.workflow.class_guard import GUARD_CHOICES
from mmdet_pu.workflow.fit_options import (DEFAULT_FACTORS, FINAL_CHOICES,
                                           PSEUDO_LABEL_SOURCES, SELF_TRAIN_INITS,
                                           SELF_TRAIN_LOSSES, SELF_TRAIN_MIN_SCORE,
                                           SELF_TRAIN_UNCERTAIN_SCORE)
from mmdet_pu.workflow.fit_report import format_summary
from mmdet_pu.workflow.prior_fit import fit_prior
from mmdet_pu.workflow.runs import check_run_arguments, default_work_dir


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Fit the class prior of a config to its data (<= 4 trainings, a '
        'fifth to distil them, a sixth to guard several classes)',
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument('config', help='a PU config (binary or multi-class; Faster '
                        'R-CNN, Cascade R-CNN or a dense detector)')
    parser.add_argument('--work-dir', help='default: work_dirs/<config name>_fit_prior')
    parser.add_argument('--factors', type=positive_float, nargs='+',
                        default=list(DEFAULT_FACTORS),
                        help='odds factors on the estimated shares, one training each '
                        f'(default: {" ".join(map(str, DEFAULT_FACTORS))})')
    parser.add_argument('--no-self-train', dest='self_train', action='store_false',
                        help='leave out the self-training (three trainings at most)')
    parser.add_argument('--self-train-loss', choices=SELF_TRAIN_LOSSES, default='pu',
                        help="the self-training round's classification loss: the PU "
                        "losses at the chosen priors (default) or the detector's own")
    parser.add_argument('--self-train-init', choices=SELF_TRAIN_INITS, default='scratch',
                        help="where the self-training round starts: the config's "
                        "initialisation (default) or the weights of the criterion's "
                        'choice, whose priors it trains at')
    parser.add_argument('--pseudo-labels-from', choices=PSEUDO_LABEL_SOURCES,
                        default='more',
                        help="whose confident detections the self-training round learns: "
                        "those of whichever of the provisional detector and the "
                        "criterion's choice gives more pseudo-labels at its own cut "
                        "(default), the provisional's, the criterion's choice's, or "
                        'those of the first trainings fused into one detector (where '
                        "that source scores no unlabeled cell at its cut, the criterion's "
                        "choice's); the round trains at the chosen priors either way")
    parser.add_argument('--final', choices=[c.replace('_', '-') for c in FINAL_CHOICES],
                        default='distilled',
                        help='what the fit returns after self-training: one detector '
                        'distilled from all the trainings fused (default; distilled/: the '
                        'self-trained detector fine-tuned with its own loss on the fused '
                        'detections above their validation threshold; one detector\'s '
                        'inference cost), the fused detector itself (fused/, a '
                        'FusedEnsemble of all the trainings: the self-trained one has half '
                        'the vote, the others share the rest by their criterion; the '
                        "trainings' inference cost together), the self-trained detector, "
                        'or the training with the best criterion among all of them')
    parser.add_argument('--uncertain-score', type=float, metavar='SCORE',
                        help='ignore in the self-training round the detections scored '
                        f'from SCORE (in [0, {SELF_TRAIN_MIN_SCORE:g})) up to the '
                        "pseudo-labels' threshold, learned neither "
                        'as cells nor as background (e.g. '
                        f'{SELF_TRAIN_UNCERTAIN_SCORE:g}; default: none, they stay '
                        'unlabeled)')
    parser.add_argument('--guard', choices=GUARD_CHOICES, default='auto',
                        help="train the config with the detector's own classification "
                        'loss too (the reference) and take from it the classes it ranks '
                        'better on the labeled validation cells: auto (default) with '
                        'several classes, on, off')
    parser.add_argument('--no-box-fit', dest='box_fit', action='store_false',
                        help='train a Faster R-CNN or Cascade R-CNN config without the '
                        'box-fit negatives the fit otherwise adds to it')
    parser.add_argument('--seed', type=int, default=0, help='training seed (default 0)')
    parser.add_argument('--cfg-options', nargs='+', default=[], metavar='KEY=VALUE',
                        help='passed to every training, test and estimate')
    parser.add_argument('--jobs', type=int, default=1,
                        help='trainings side by side (each gets cores/jobs threads)')
    args = parser.parse_args(argv)
    if not osp.isfile(args.config):
        parser.error(f'config {args.config} not found')
    check_run_arguments(parser, args.jobs, args.cfg_options, factors=args.factors)
    args.work_dir = args.work_dir or default_work_dir(args.config, '_fit_prior')
    return args


def main(argv=None):
    args = parse_args(argv)
    summary = fit_prior(args.config, args.work_dir, args.cfg_options, args.seed,
                        args.factors, args.jobs, self_train=args.self_train,
                        self_train_loss=args.self_train_loss,
                        final=args.final.replace('-', '_'), box_fit=args.box_fit,
                        uncertain_score=args.uncertain_score,
                        self_train_init=args.self_train_init,
                        pseudo_labels_from=args.pseudo_labels_from, guard=args.guard,
                        echo=lambda msg: print(f'[fit_prior] {msg}', flush=True))
    print(f'\n{format_summary(summary)}\n[fit_prior] wrote {args.work_dir}/fit_prior.json, '
          'fit_prior.png and fit_prior.pth')
    return summary


if __name__ == '__main__':
    sys.exit(report_user_errors(main, errors=RUN_ERRORS))
