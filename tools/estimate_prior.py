"""Estimate the class prior pi of each PU stage instead of sweeping it.

Usage::

    python tools/estimate_prior.py CONFIG CKPT [--split train|val] [--num-images N]
        [--score-thr 0.5] [--oracle] [--out FILE.json] [--seed 0] [--device DEV]
        [--cfg-options k=v ...]

CKPT is a detector trained with a provisional prior (any reasonable value: one training
instead of one per candidate). On the config's incompletely annotated images (the
training split by default, through the validation pipeline, with the config's deletion
applied as its loader does; ``--split val`` takes the validation images; ``--num-images``
takes N images evenly spaced over the split) the tool draws the samples of both stages
exactly as training does and estimates (``mmdet_pu/evaluation/prior_estimation.py``
documents the estimators, their derivation and references):

* the **RoI stage** prior (``model.roi_head.bbox_head.loss_cls.prior``; with several
  classes one prior per class, ``model.roi_head.bbox_head.loss_cls.priors``):

  - the *risk-matched prior*, the one to train with: the prior at which the PU risk
    subtracts exactly what the positives contribute to ``E_x[H(c,bg)]`` for this
    detector, whose labeled cells score higher than its unlabeled ones;
  - the *share of cells* among the sampled RoIs, by the *label frequency* estimator
    (the detector's detections with ``score >= --score-thr`` complete the labeled cells;
    Elkan & Noto 2008) and by *best-bin estimation* (BBE, Garg et al. 2021) on the RoI
    head's scores of labeled vs unlabeled RoIs;
* the **RPN** prior (``model.rpn_head.loss_cls.prior``) by the label frequency estimator.

``--oracle`` also computes the shares and the risk-matched prior with the complete
annotations of the annotation file, for data whose files are complete (the synthetic
sets, the paper's datasets before deletion): a check of the estimators, not something
to train with on real data.

The recommended RoI estimator is the risk-matched prior on the training split, the
samples the loss sees (``mmdet_pu.evaluation.prior_estimation.recommend``; BBE on the
validation split, or the label frequency, when a head has no background logit). On
held-out images the tool warns when the two shares differ by more than 0.05; it warns
when the detector finds no unlabeled cell and when BBE's scores do not separate labeled
from unlabeled RoIs.

Output: a table on stdout and, with ``--out``, a JSON file (written atomically) with,
per stage (``stages.roi``, ``stages.rpn``): the config ``key``, the sample counts ``n``,
``n_p`` (labeled positives) and ``n_u`` (unlabeled), and per estimator the ``value`` for
the key, the per-class values and their statistics (label frequency ``c``; BBE
``alpha``, ``z`` (z*), ``q_p``, ``q_u``, ``n_p``; risk-matched ``rho``, ``share``,
``h_p``, ``h_u``); ``trained_with`` (the checkpoint's priors); ``warnings``; ``notes``;
``recommended`` (the estimator, the reason, the RoI and RPN values; with several classes
``priors``, one per class) and ``cfg_options``, the options that train every stage at
its recommended estimate (``tools/train.py CONFIG --cfg-options ...``;
``tools/sweep_prior.py CONFIG --estimate FILE.json`` sweeps narrowly around the RoI
value).

With several classes ``cfg_options`` trains with fixed class priors,
``model.roi_head.bbox_head.loss_cls.priors``, and removes the ``PriorUpdateHook``
(``custom_hooks=[]`` when it is the config's only custom hook; otherwise a note says to
remove it): on the synthetic multi-class task the paper's update rule, which derives the
other priors from pi_1 and detection counts, left the tumor prior at half its share or
ran away, and fixed estimated priors closed most of the gap to the upper bound
(docs/experiments.md, "Fixed estimated priors"). ``cfg_options_update_rule`` keeps the
hook and sets its pi_1 (``anchor_prior``) instead; it is what the sweep varies.

On the synthetic sets (docs/experiments.md, "With the risk-matched prior") the detector
trained at the risk-matched prior, two trainings in all, reached or passed the test F1
of the prior a six-value sweep selects by validation recall on keep-1 and the
multi-class task at every seed, where training at the share of cells made the binary
detector bold. On keep-5 the estimate was the share and lost 0.035 at two seeds of
three; ``tools/sweep_prior.py CONFIG --estimate FILE.json --num 1 --values P0 --select
pu`` trains with it and keeps the better of it and the provisional prior P0 by Lee &
Liu's PU criterion, which kept P0 there. ``tools/estimate_vs_sweep.py`` runs that
comparison on a config of your own.
"""
import argparse
import json
import os
import os.path as osp

import numpy as np
import torch
from mmengine.config import DictAction
from mmengine.dataset import pseudo_collate
from mmengine.registry import init_default_scope
from mmengine.runner import load_checkpoint

from mmdet.registry import DATASETS, MODELS
from mmdet_pu.apis.prior_keys import (ROI_PRIORS_KEY, prior_hook_index, stage_prior_keys,
                                      type_name)
from mmdet_pu.io.atomic import write_atomic
from mmdet_pu.engine.hooks.prior_update_hook import count_annotations
from mmdet_pu.evaluation.prior_estimation import DISAGREEMENT, estimate_priors, recommend
from mmdet_pu.evaluation.prior_samples import sample_stages
from mmdet_pu.launch import load_config

ESTIMATORS = ('risk_matched', 'label_frequency', 'bbe', 'oracle', 'risk_matched_oracle')
#: Estimators with one result dict per class (the others hold ``priors`` and ``c``).
PER_CLASS_RESULTS = ('bbe', 'risk_matched', 'risk_matched_oracle')


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


def dataset_config(cfg, split, complete=False, config_file='config'):
    """The split's dataset config with the validation (else test) pipeline, which has no
    random transforms; ``complete`` drops the deletion."""
    loader = cfg.get(f'{split}_dataloader', None)
    if not loader or 'dataset' not in loader:
        raise ValueError(f'{config_file}: {split}_dataloader is not set; estimate on '
                         'a config that has it (or the other --split)')
    pipeline = None
    for name in ('test', 'val'):
        other = cfg.get(f'{name}_dataloader', None) or {}
        pipeline = other.get('dataset', {}).get('pipeline', pipeline)
    if pipeline is None:
        raise ValueError(f'{config_file}: neither val_dataloader nor test_dataloader has '
                         'a dataset pipeline to load the images without augmentation')
    dataset = loader.dataset.copy()
    dataset['pipeline'] = pipeline
    if complete:
        if type_name(dataset) != 'CellCocoDataset':
            raise ValueError(f'{config_file}: {split}_dataloader.dataset is a '
                             f'{type_name(dataset)}: '
                             '--oracle needs a CellCocoDataset, whose deletion it switches '
                             'off for the complete annotations')
        dataset['deletion'] = None
    return dataset


def even_indices(total, num=None):
    """``num`` indices evenly spaced over ``range(total)`` (all of them by default)."""
    if num is None or num >= total:
        return list(range(total))
    return sorted(set(np.linspace(0, total - 1, num).round().astype(int).tolist()))


def trained_priors(model):
    """The priors the checkpoint's losses hold (buffers saved with the weights)."""
    def prior_of(loss):
        for name in ('prior', 'priors'):
            value = getattr(loss, name, None)
            if isinstance(value, torch.Tensor):  # float32: 6 digits are exact
                values = [float(f'{v:.6g}') for v in value.reshape(-1).tolist()]
                return values[0] if name == 'prior' else values
        return None
    return dict(roi=prior_of(model.roi_head.bbox_head.loss_cls),
                rpn=prior_of(model.rpn_head.loss_cls))


def anchor_class(cfg, hook, classes):
    """Index of the multi-class anchor class, as ``PriorUpdateHook`` resolves it (the
    most annotated class in a config without the hook)."""
    chosen = cfg.custom_hooks[hook].get('anchor_class', None) if hook is not None else None
    if isinstance(chosen, str):
        if chosen not in classes:
            raise ValueError(f'custom_hooks.{hook}.anchor_class {chosen!r} is not one of '
                             f'the classes {tuple(classes)}')
        return list(classes).index(chosen)
    if chosen is not None:
        return int(chosen)
    counts = count_annotations(DATASETS.build(cfg.train_dataloader.dataset), len(classes))
    return int(np.argmax(counts))


def rounded(value):
    """A prior for the command line: three significant digits."""
    return float(f'{value:.3g}')


def build_report(estimates, keys, classes, anchor, trained_with, held_out=True,
                 only_hook=False):
    """The JSON report: per stage and estimator the value for its key, the
    recommendation and the options to train with it (``held_out``: estimated on images
    the detector was not trained on; ``only_hook``: the config's ``PriorUpdateHook`` is
    its only custom hook, so ``custom_hooks=[]`` removes it)."""
    roi, rpn = estimates['roi'], estimates['rpn']
    roi_estimates = {}
    for name in ESTIMATORS:
        found = roi[name]
        if found is None:
            continue
        if name in PER_CLASS_RESULTS:
            per_class = dict(zip(classes, found))
            value = found[anchor]['prior']
            roi_estimates[name] = dict(value=value, per_class=per_class)
        else:
            roi_estimates[name] = dict(
                value=found['priors'][anchor], c_all=found['c_all'],
                per_class={c: dict(prior=p, c=lf) for c, p, lf in
                           zip(classes, found['priors'], found['c'])})
    rpn_estimates = {name: dict(value=rpn[name]['prior'], c_all=rpn[name]['c_all'])
                     for name in ('label_frequency', 'oracle') if rpn[name] is not None}
    stages = dict(
        roi=dict(key=keys.roi, n=roi['n'], n_p=dict(zip(classes, roi['n_p'])),
                 n_u=roi['n_u'], labeled_cells=dict(zip(classes, roi['labeled_cells'])),
                 pseudo_complete_cells=dict(zip(classes, roi['pseudo_complete_cells'])),
                 estimates=roi_estimates),
        rpn=dict(key=keys.rpn, n=rpn['n'], n_p=rpn['n_p'], n_u=rpn['n_u'],
                 estimates=rpn_estimates))
    bbe = roi['bbe'][anchor]
    usable = bbe['prior'] if bbe['prior'] is not None and bbe['q_u'] < 1 else None
    matched = roi['risk_matched'][anchor]['prior'] if roi['risk_matched'] else None
    estimator, reason = recommend(held_out, matched, usable)
    roi_value = roi_estimates[estimator]['value']
    rpn_value = rpn_estimates['label_frequency']['value']
    recommended = dict(estimator=estimator, reason=reason, roi=rounded(roi_value),
                       rpn=rounded(rpn_value))
    notes = []
    rpn_options = []
    if keys.rpn is None:
        notes.append('the RPN has no PULoss prior: its estimate is not used')
    else:
        rpn_options.append(f'{keys.rpn}={rounded(rpn_value)!r}')
    if len(classes) <= 1:
        options, extra = [f'{keys.roi}={rounded(roi_value)!r}'] + rpn_options, {}
    else:
        recommended['priors'] = class_priors(roi_estimates, estimator, classes, notes)
        options = [f'{ROI_PRIORS_KEY}={recommended["priors"]!r}'] + rpn_options
        extra = {}
        if keys.roi != ROI_PRIORS_KEY:  # a PriorUpdateHook: remove it, or sweep pi_1
            extra['cfg_options_update_rule'] = [f'{keys.roi}={rounded(roi_value)!r}'] + (
                [] if keys.rpn_by_hook else rpn_options)
            if only_hook:
                options.append('custom_hooks=[]')
            else:
                notes.append(f'to train with fixed priors, remove the PriorUpdateHook '
                             f'({keys.roi.rsplit(".", 1)[0]}) from the config as well')
    return dict(
        classes=list(classes), anchor_class=classes[anchor] if len(classes) > 1 else None,
        trained_with=trained_with, stages=stages,
        warnings=warnings(roi, roi_estimates, classes, held_out), notes=notes,
        recommended=recommended, cfg_options=options, **extra)


def class_priors(roi_estimates, estimator, classes, notes):
    """Fixed per-class priors, the recommended estimator's (several classes).

    Each stage trains at its own estimate, as with one class: the RoI head's classes at
    theirs and the RPN at its own, not at their sum. A ``PriorUpdateHook`` would
    re-derive the non-anchor priors from detection counts; on the synthetic multi-class
    task that rule left the tumor prior at half its share, ran away or locked classes
    out, where fixed estimated priors did not (docs/experiments.md, "Fixed estimated
    priors"). A class without an estimate of that estimator takes its label frequency.
    """
    chosen = roi_estimates[estimator]['per_class']
    fallback = roi_estimates['label_frequency']['per_class']
    priors = []
    for cls in classes:
        value = chosen[cls]['prior']
        if value is None:
            value = fallback[cls]['prior']
            notes.append(f'{cls}: no {estimator} estimate (no labeled RoI of the class), '
                         'the label frequency is used')
        priors.append(rounded(value))
    return priors


def warnings(roi, roi_estimates, classes, held_out):
    """Signs that the provisional detector cannot support an estimate (the two shares
    are compared on held-out images only: on the training images BBE falls low)."""
    found = []
    values = [roi_estimates[name]['value'] for name in ('label_frequency', 'bbe')]
    if held_out and None not in values and abs(values[0] - values[1]) > DISAGREEMENT:
        found.append(f'the RoI estimates differ by {abs(values[0] - values[1]):.3f} (> '
                     f'{DISAGREEMENT}): the detector\'s detections or scores are '
                     'unreliable; train it longer or with the estimate and estimate again')
    if sum(roi['pseudo_complete_cells']) == sum(roi['labeled_cells']):
        found.append('the detector found no unlabeled cell (score >= the threshold): the '
                     'label-frequency estimate is the share of labeled positives. Train '
                     'the provisional model longer or with a larger prior')
    for cls, bbe in zip(classes, roi['bbe']):
        if bbe['prior'] is not None and bbe['q_u'] == 1:
            found.append(f'BBE ({cls}): the best bin is the whole score range, the RoI '
                         'scores do not separate labeled from unlabeled RoIs')
    return found


def _fmt(value, digits=4):
    return '-' if value is None or (isinstance(value, float) and np.isnan(value)) \
        else f'{value:.{digits}g}'


def format_table(report):
    """The estimates as a plain-text table."""
    rows = [('stage', 'class', 'estimator', 'prior', 'c', 'z*', 'n_p (BBE)')]
    roi = report['stages']['roi']
    for name, found in roi['estimates'].items():
        for cls, values in found['per_class'].items():
            rows.append(('RoI', cls, name, _fmt(values.get('prior')), _fmt(values.get('c')),
                         _fmt(values.get('z')), _fmt(values.get('n_p'))))
    for name, found in report['stages']['rpn']['estimates'].items():
        rows.append(('RPN', 'all', name, _fmt(found['value']), _fmt(found['c_all']), '-',
                     '-'))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ['  '.join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
             for row in rows]
    rpn = report['stages']['rpn']
    lines += [
        f'samples: RoI n={roi["n"]} (labeled positives {sum(roi["n_p"].values())}, '
        f'unlabeled {roi["n_u"]}); RPN n={rpn["n"]} (labeled positives {rpn["n_p"]}, '
        f'unlabeled {rpn["n_u"]})',
        f'trained with: RoI {report["trained_with"]["roi"]}, RPN '
        f'{report["trained_with"]["rpn"]}']
    lines += [f'warning: {warning}' for warning in report['warnings']]
    lines += [f'note: {note}' for note in report['notes']]
    if report['anchor_class'] is not None:
        lines.append(f'anchor class: {report["anchor_class"]}')
    lines.append(f'recommended ({report["recommended"]["estimator"]}): --cfg-options '
                 + ' '.join(report['cfg_options']))
    if 'cfg_options_update_rule' in report:
        lines.append('with the PriorUpdateHook\'s update rule instead: --cfg-options '
                     + ' '.join(report['cfg_options_update_rule']))
    return '\n'.join(lines)


def main(argv=None):
    args = parse_args(argv)
    cfg = load_config(args.config, args.cfg_options)
    init_default_scope(cfg.get('default_scope', 'mmdet'))
    keys = stage_prior_keys(cfg, args.config)
    dataset_cfg = dataset_config(cfg, args.split, config_file=args.config)
    complete_cfg = dataset_config(cfg, args.split, complete=True,
                                  config_file=args.config) if args.oracle else None
    device = args.device or ('cuda' if torch.cuda.is_available() else 'cpu')

    model = MODELS.build(cfg.model)
    load_checkpoint(model, args.checkpoint, map_location='cpu')
    model = model.to(device).eval()
    dataset = DATASETS.build(dataset_cfg)
    complete = DATASETS.build(complete_cfg) if complete_cfg is not None else None
    classes = list(dataset.metainfo['classes'])
    num_classes = model.roi_head.bbox_head.num_classes
    if len(classes) != num_classes:
        raise ValueError(f'{args.config}: the dataset has {len(classes)} classes '
                         f'{tuple(classes)}, the model {num_classes}')
    hook = prior_hook_index(cfg)
    anchor = anchor_class(cfg, hook, classes) if num_classes > 1 else 0

    torch.manual_seed(args.seed)
    images = []
    indices = even_indices(len(dataset), args.num_images)
    for idx in indices:
        batch = pseudo_collate([dataset[idx]])
        truth = None
        if complete is not None:
            item = complete[idx]
            if item['data_samples'].img_id != batch['data_samples'][0].img_id:
                raise RuntimeError(f'image {idx}: the complete annotation file lists '
                                   'another image; the two datasets differ')
            truth = [item['data_samples'].gt_instances.to(device)]
        images += sample_stages(model, batch, args.score_thr, truth)
    estimates = estimate_priors(
        images, num_classes,
        estimator=getattr(model.roi_head.bbox_head.loss_cls, 'estimator', 'union'))

    report = dict(config=args.config, checkpoint=args.checkpoint, split=args.split,
                  images=len(indices), score_thr=args.score_thr, seed=args.seed,
                  **build_report(estimates, keys, classes, anchor, trained_priors(model),
                                 held_out=args.split == 'val',
                                 only_hook=hook is not None and len(cfg.custom_hooks) == 1))
    print(format_table(report))
    if args.out:
        os.makedirs(osp.dirname(osp.abspath(args.out)), exist_ok=True)
        write_atomic(args.out, json.dumps(report, indent=1))
        print(f'estimates written to {osp.abspath(args.out)}')
    return report


if __name__ == '__main__':
    main()
