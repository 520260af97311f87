"""The estimate report: built from the estimators' results, printed, written, read back.

:func:`build_report` turns :func:`~.estimation.estimate_priors` into the report of
``tools/estimate_prior.py --out FILE.json``: per stage (``stages.roi``, ``stages.rpn``)
the config ``key``, the sample counts ``n``, ``n_p`` (labeled positives) and ``n_u``
(unlabeled), and per estimator the ``value`` for the key, the per-class values and their
statistics (label frequency ``c``; BBE ``alpha``, ``z`` (z*), ``q_p``, ``q_u``, ``n_p``;
risk-matched ``rho``, ``share``, ``h_p``, ``h_u``); ``trained_with`` (the checkpoint's
priors); ``warnings``; ``notes``; ``recommended`` (the estimator of
:func:`~.estimation.recommend`, the reason, the RoI and RPN values rounded to three
significant digits; with several classes ``priors``, one per class) and ``cfg_options``,
the options that train every stage at its recommended estimate.

With several classes ``cfg_options`` trains with fixed class priors
(``model.roi_head.bbox_head.loss_cls.priors``) and removes the ``PriorUpdateHook``
(``custom_hooks=[]`` when it is the config's only custom hook; otherwise a note says to
remove it); ``cfg_options_update_rule`` keeps the hook and sets its pi_1
(``anchor_prior``) instead, the key a sweep varies.

:func:`build_stage_report` is the same report for a dense or cascade detector
(:mod:`.label_frequency`; ``detector`` ``'dense'`` or ``'cascade'``): one entry of
``stages`` per stage (:func:`~.keys.stage_name`: ``head``, ``rpn``, ``roi0``, ...), each
with the label-frequency estimate (and ``oracle``), ``recommended`` the label frequency
of every stage, ``cells`` the labeled, pseudo-complete (and complete) cells per class.

:func:`write_estimate` writes the report atomically; :func:`read_estimate` is the one
reader of such a file.
"""
import json
from typing import List, NamedTuple, Optional

import numpy as np

from cellio.atomic import write_json_atomic
from .estimation import DISAGREEMENT, recommend
from .keys import ROI_PRIORS_KEY, stage_name

#: The warning when the detections add no cell to the labeled ones.
NO_UNLABELED_CELL = ('the detector found no unlabeled cell (score >= the threshold): the '
                     'label-frequency estimate is the share of labeled positives. Train '
                     'the provisional model longer or with a larger prior')
ESTIMATORS = ('risk_matched', 'label_frequency', 'bbe', 'oracle', 'risk_matched_oracle')
#: Estimators with one result dict per class (the others hold ``priors`` and ``c``).
PER_CLASS_RESULTS = ('bbe', 'risk_matched', 'risk_matched_oracle')


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
        warnings=warnings(roi, roi_estimates, held_out), notes=notes,
        recommended=recommended, cfg_options=options, **extra)


def class_priors(roi_estimates, estimator, classes, notes):
    """Fixed per-class priors, the recommended estimator's (several classes).

    Each stage trains at its own estimate, as with one class: the RoI head's classes at
    theirs and the RPN at its own, not at their sum; the ``PriorUpdateHook``, which
    re-derives the non-anchor priors from detection counts, is left out
    (docs/method.md#prior-update). A class without an estimate of that estimator takes
    its label frequency.
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


def warnings(roi, roi_estimates, held_out):
    """Signs that the provisional detector cannot support an estimate (the two shares
    are compared on held-out images only: on the training images BBE falls low)."""
    found = []
    values = [roi_estimates[name]['value'] for name in ('label_frequency', 'bbe')]
    if held_out and None not in values and abs(values[0] - values[1]) > DISAGREEMENT:
        found.append(f'the RoI estimates differ by {abs(values[0] - values[1]):.3f} (> '
                     f'{DISAGREEMENT}): the detector\'s detections or scores are '
                     'unreliable; train it longer or with the estimate and estimate again')
    if sum(roi['pseudo_complete_cells']) == sum(roi['labeled_cells']):
        found.append(NO_UNLABELED_CELL)
    bbe = next((entry for entry in roi['bbe'] if entry['prior'] is not None), None)
    if bbe is not None and bbe['q_u'] == 1:  # one cell-level bin for every class
        found.append('BBE: the best bin is the whole cell-score range, the RoI scores do '
                     'not separate labeled from unlabeled RoIs')
    return found


def _share_estimate(share, cells, labeled_cells, classes, per_class: bool,
                    as_list: bool) -> dict:
    """One estimator's entry of a dense or cascade stage: ``value`` (a list with
    ``as_list``), ``c_all`` and, for a stage that classifies, ``per_class``."""
    c_all = float(sum(labeled_cells) / sum(cells)) if sum(cells) else None
    shares = list(share.shares)
    if not per_class:
        return dict(value=shares[0], c_all=c_all)
    return dict(value=shares if as_list else shares[0], c_all=c_all,
                per_class={cls: dict(prior=prior, c=float(n / d) if d else None)
                           for cls, prior, n, d in zip(classes, shares, labeled_cells,
                                                       cells)})


def build_stage_report(counts, prior_keys, classes, trained_with, detector) -> dict:
    """The report of a dense or cascade detector's label-frequency estimate.

    Args:
        counts: :class:`~.label_frequency.StageCounts`.
        prior_keys: per loss key the config key of its prior(s), None for a loss
            without a prior (its estimate is reported, not used).
        classes: the class names.
        trained_with: per loss key the prior the checkpoint's loss holds.
        detector: ``'dense'`` or ``'cascade'`` (:func:`~.keys.detector_kind`).
    """
    labeled, pseudo = counts.labeled_cells.tolist(), counts.pseudo_cells.tolist()
    stages, notes, found_warnings, options = {}, [], [], []
    recommended = dict(
        estimator='label_frequency',
        reason='the share of each stage\'s samples that its assigner makes positive for '
               'the labeled cells and the detections with score >= the threshold (the '
               'estimator of dense and cascade stages)')
    for loss_key, share in counts.label_frequency.items():
        name, key = stage_name(loss_key), prior_keys[loss_key]
        per_class = name != 'rpn'  # the RPN is class-agnostic
        as_list = len(share.positives) > 1 or (key or '').endswith('.priors')
        estimates = dict(label_frequency=_share_estimate(share, pseudo, labeled, classes,
                                                         per_class, as_list))
        if counts.oracle is not None:
            estimates['oracle'] = _share_estimate(
                counts.oracle[loss_key], counts.complete_cells.tolist(), labeled, classes,
                per_class, as_list)
        n_p = dict(zip(classes, share.labeled)) if per_class else share.labeled[0]
        stages[name] = dict(key=key, n=share.total, n_p=n_p,
                            n_u=share.total - sum(share.labeled), estimates=estimates)
        value = estimates['label_frequency']['value']
        recommended[name] = [rounded(v) for v in value] if as_list else rounded(value)
        if key is None:
            notes.append(f'{loss_key} is no PU loss with a prior: the {name} estimate is '
                         'not used')
            continue
        options.append(f'{key}={recommended[name]!r}')
        for cls, prior in zip(classes if per_class else ['all'], share.shares):
            if prior <= 0:
                found_warnings.append(
                    f'{name} ({cls}): no sample is a positive (share 0), a PU loss needs a '
                    'prior > 0; label cells of the class or train the provisional model '
                    'longer')
    if sum(pseudo) == sum(labeled):
        found_warnings.append(NO_UNLABELED_CELL)
    cells = dict(labeled=dict(zip(classes, labeled)),
                 pseudo_complete=dict(zip(classes, pseudo)))
    if counts.complete_cells is not None:
        cells['complete'] = dict(zip(classes, counts.complete_cells.tolist()))
    return dict(
        detector=detector, classes=list(classes), anchor_class=None,
        trained_with={stage_name(key): value for key, value in trained_with.items()},
        stages=stages, cells=cells, warnings=found_warnings, notes=notes,
        recommended=recommended, cfg_options=options)


def main_stage(report: dict) -> Optional[str]:
    """The stage whose prior a sweep varies and a fit plots: the RoI head (Faster R-CNN),
    the dense head, the first cascade stage (the first stage other than the RPN)."""
    return next((name for name in report['stages'] if name != 'rpn'), None)


def _fmt(value, digits=4):
    return '-' if value is None or (isinstance(value, float) and np.isnan(value)) \
        else f'{value:.{digits}g}'


def _table(rows):
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ['  '.join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
            for row in rows]


def _format_stage_table(report):
    """:func:`format_table` of a dense or cascade report."""
    rows = [('stage', 'class', 'estimator', 'prior', 'c')]
    for name, stage in report['stages'].items():
        for estimator, found in stage['estimates'].items():
            for cls, values in found.get('per_class', {}).items():
                rows.append((name, cls, estimator, _fmt(values['prior']), _fmt(values['c'])))
            if 'per_class' not in found:
                rows.append((name, 'all', estimator, _fmt(found['value']),
                             _fmt(found['c_all'])))
    lines = _table(rows)
    lines.append('samples: ' + '; '.join(
        f'{name} n={stage["n"]} (labeled positives '
        f'{sum(stage["n_p"].values()) if isinstance(stage["n_p"], dict) else stage["n_p"]}, '
        f'unlabeled {stage["n_u"]})' for name, stage in report['stages'].items()))
    lines.append('cells: ' + ', '.join(f'{kind} {counts}'
                                       for kind, counts in report['cells'].items()))
    lines.append('trained with: ' + ', '.join(f'{name} {value}' for name, value in
                                              report['trained_with'].items()))
    lines += [f'warning: {warning}' for warning in report['warnings']]
    lines += [f'note: {note}' for note in report['notes']]
    lines.append(f'recommended ({report["recommended"]["estimator"]}): --cfg-options '
                 + ' '.join(report['cfg_options']))
    return '\n'.join(lines)


def format_table(report):
    """The estimates as a plain-text table."""
    if 'detector' in report:
        return _format_stage_table(report)
    rows = [('stage', 'class', 'estimator', 'prior', 'c', 'z*', 'n_p (BBE)')]
    roi = report['stages']['roi']
    for name, found in roi['estimates'].items():
        for cls, values in found['per_class'].items():
            rows.append(('RoI', cls, name, _fmt(values.get('prior')), _fmt(values.get('c')),
                         _fmt(values.get('z')), _fmt(values.get('n_p'))))
    for name, found in report['stages']['rpn']['estimates'].items():
        rows.append(('RPN', 'all', name, _fmt(found['value']), _fmt(found['c_all']), '-',
                     '-'))
    lines = _table(rows)
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


def write_estimate(path: str, report: dict) -> None:
    """Write the report to ``path`` atomically (JSON)."""
    write_json_atomic(path, report, indent=1)


class Estimate(NamedTuple):
    """What the tools take from an estimate file.

    Attributes:
        prior: the recommended prior of the :func:`main_stage` (the RoI stage's, the
            anchor class's with several classes; a dense head's or the first cascade
            stage's).
        key: the config key of that stage's prior (``stages.<stage>.key``).
        cfg_options: the options that train every stage at its recommended estimate.
        update_rule_options: with several classes and a ``PriorUpdateHook``, the options
            that keep the hook and set its pi_1; None otherwise.
        report: the whole report (:func:`build_report`): every stage's estimates, which
            the candidate priors of :mod:`.candidates` scale.
    """
    prior: float
    key: str
    cfg_options: List[str]
    update_rule_options: Optional[List[str]]
    report: dict

    def sweep_options(self) -> List[str]:
        """The options a sweep of :attr:`key` trains with besides the swept value: the
        update rule's with a ``PriorUpdateHook`` (the sweep varies its pi_1), otherwise
        :attr:`cfg_options` (the per-stage RPN prior), in both cases without ``key``."""
        options = self.cfg_options if self.update_rule_options is None \
            else self.update_rule_options
        return [option for option in options if not option.startswith(f'{self.key}=')]


def read_estimate(path: str) -> Estimate:
    """The :class:`Estimate` of a file written by :func:`write_estimate`.

    Raises:
        OSError: the file cannot be read.
        ValueError: it is not JSON, a field is missing or the main stage's
            ``recommended`` value (``recommended.roi``) is not a number (the message
            names the file and the field).
    """
    expected = 'expected the --out file of tools/estimate_prior.py'
    try:
        with open(path) as f:
            estimate = json.load(f)
        stage = main_stage(estimate)
        if stage is None:
            raise KeyError('stages.roi')
        prior = estimate['recommended'][stage]
        key = estimate['stages'][stage]['key']
        options = list(estimate['cfg_options'])
        update_rule = estimate.get('cfg_options_update_rule', None)
    except json.JSONDecodeError as error:
        raise ValueError(f'{path}: not valid JSON ({error}); {expected}') from None
    except (KeyError, TypeError) as error:
        raise ValueError(f'{path}: no field {error} ({expected})') from None
    if isinstance(prior, bool) or not isinstance(prior, (int, float)):
        raise ValueError(f'{path}: recommended.{stage} = {prior!r}, expected a number')
    return Estimate(float(prior), key, options,
                    None if update_rule is None else list(update_rule), estimate)
