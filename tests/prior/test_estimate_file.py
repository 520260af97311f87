"""The estimate report: built from the estimators' results, printed, read back."""
import json

import pytest
from mmengine.config import Config

from mmdet_pu.prior.estimate_file import (Estimate, build_report, format_table,
                                          read_estimate, write_estimate)
from mmdet_pu.prior.keys import ROI_PRIORS_KEY, RPN_PRIOR_KEY, stage_prior_keys
from tests._data import REPO

CONFIGS = REPO / 'configs'


def _estimates(num_classes, risk_matched=True):
    per_class = [0.1 * (m + 1) for m in range(num_classes)]
    shares = dict(priors=per_class, c=[0.5] * num_classes, c_all=0.5)
    matched = [dict(prior=p - 0.02, rho=0.05, share=p, h_p=2.0, h_u=1.5)
               for p in per_class] if risk_matched else None
    return dict(
        roi=dict(n=100, n_p=[5] * num_classes, n_u=100 - 5 * num_classes,
                 labeled_cells=[2] * num_classes, pseudo_complete_cells=[4] * num_classes,
                 label_frequency=shares, oracle=None, risk_matched=matched,
                 risk_matched_oracle=None,
                 bbe=[dict(prior=p + 0.01, alpha=p, z=0.9, q_p=0.5, q_u=0.5 * p, n_p=4,
                           upper_bound=0.5, p_includes_gt=False) for p in per_class]),
        rpn=dict(n=512, n_p=3, n_u=509, oracle=None,
                 label_frequency=dict(prior=0.006123, c_all=0.5)))


def test_report_of_a_multi_class_config_gives_fixed_class_priors():
    keys = stage_prior_keys(Config.fromfile(str(CONFIGS / 'pu' / 'nucls_mpu.py')))
    report = build_report(_estimates(3), keys, ['a', 'b', 'c'], anchor=1,
                          trained_with=dict(roi=[0.3, 0.2, 0.1], rpn=0.6),
                          held_out=False, only_hook=True)
    assert report['anchor_class'] == 'b'
    roi = report['stages']['roi']['estimates']
    assert roi['label_frequency']['value'] == pytest.approx(0.2)  # the anchor class
    assert roi['bbe']['value'] == pytest.approx(0.21)
    assert roi['bbe']['per_class']['c']['alpha'] == pytest.approx(0.3)
    assert roi['risk_matched']['value'] == pytest.approx(0.18)
    assert roi['risk_matched']['per_class']['c']['h_u'] == 1.5
    # the risk-matched prior, one per class, the RPN at its own label frequency
    assert report['recommended']['estimator'] == 'risk_matched'
    assert 'held-out' not in report['recommended']['reason']
    assert (report['recommended']['roi'], report['recommended']['rpn']) == (0.18, 0.00612)
    assert report['recommended']['priors'] == [0.08, 0.18, 0.28]
    assert report['cfg_options'] == [
        'model.roi_head.bbox_head.loss_cls.priors=[0.08, 0.18, 0.28]',
        'model.rpn_head.loss_cls.prior=0.00612', 'custom_hooks=[]']
    # the update rule's own option, what tools/sweep_prior.py --estimate varies; the
    # hook sets the RPN prior to the sum of the class priors
    assert report['cfg_options_update_rule'] == ['custom_hooks.0.anchor_prior=0.18']
    assert report['notes'] == [] and report['warnings'] == []
    table = format_table(report).splitlines()
    assert table[-3:] == [
        'anchor class: b',
        'recommended (risk_matched): --cfg-options model.roi_head.bbox_head.loss_cls.'
        'priors=[0.08, 0.18, 0.28] model.rpn_head.loss_cls.prior=0.00612 custom_hooks=[]',
        "with the PriorUpdateHook's update rule instead: --cfg-options "
        'custom_hooks.0.anchor_prior=0.18']
    # on held-out images the reason says that the training split is its split
    held_out = build_report(_estimates(3), keys, ['a', 'b', 'c'], 1,
                            dict(roi=None, rpn=None))
    assert held_out['recommended']['estimator'] == 'risk_matched'
    assert '--split train is its split' in held_out['recommended']['reason']
    # without a risk-matched estimate (a head without a background logit): BBE on
    # held-out images ...
    no_match = build_report(_estimates(3, risk_matched=False), keys,
                            ['a', 'b', 'c'], 1, dict(roi=None, rpn=None))
    assert no_match['recommended']['estimator'] == 'bbe'
    assert no_match['recommended']['priors'] == [0.11, 0.21, 0.31]
    # ... the label frequency on the training images; another custom hook: the prior
    # hook cannot be dropped by an option, a note says so; a hook that leaves the RPN
    # prior alone trains it at its estimate with the update rule too
    other_hooks = build_report(_estimates(3, risk_matched=False),
                               keys._replace(rpn_by_hook=False),
                               ['a', 'b', 'c'], 1, dict(roi=None, rpn=None),
                               held_out=False)
    assert other_hooks['recommended']['estimator'] == 'label_frequency'
    assert other_hooks['cfg_options'] == [
        'model.roi_head.bbox_head.loss_cls.priors=[0.1, 0.2, 0.3]',
        'model.rpn_head.loss_cls.prior=0.00612']
    assert other_hooks['cfg_options_update_rule'] == [
        'custom_hooks.0.anchor_prior=0.2', 'model.rpn_head.loss_cls.prior=0.00612']
    assert other_hooks['notes'] == ['to train with fixed priors, remove the '
                                    'PriorUpdateHook (custom_hooks.0) from the config '
                                    'as well']


def test_report_of_fixed_class_priors_fills_a_missing_class():
    """A config without the hook (fixed priors); class c has no risk-matched estimate."""
    cfg = Config.fromfile(str(CONFIGS / 'synthetic' / 'synthetic_multi_cap2_mpu.py'))
    keys = stage_prior_keys(cfg)
    assert keys == (ROI_PRIORS_KEY, RPN_PRIOR_KEY, False)
    estimates = _estimates(3)
    estimates['roi']['risk_matched'][2] = dict(prior=None, error='n_p=0')
    report = build_report(estimates, keys, ['a', 'b', 'c'], 0,
                          dict(roi=[0.2, 0.1, 0.1], rpn=0.4), held_out=False)
    assert report['recommended']['priors'] == [0.08, 0.18, 0.3]
    assert report['cfg_options'] == [
        'model.roi_head.bbox_head.loss_cls.priors=[0.08, 0.18, 0.3]',
        'model.rpn_head.loss_cls.prior=0.00612']
    assert 'cfg_options_update_rule' not in report
    assert report['notes'][0] == ('c: no risk_matched estimate (no labeled RoI of the '
                                  'class), the label frequency is used')


def test_report_warns_when_the_detector_cannot_support_an_estimate():
    estimates = _estimates(1)
    estimates['roi']['pseudo_complete_cells'] = [2]  # nothing found beyond the labels
    estimates['roi']['bbe'][0].update(z=0.0, q_p=1.0, q_u=1.0)  # no separation
    keys = stage_prior_keys(Config.fromfile(
        str(CONFIGS / 'synthetic' / 'synthetic_keep1_pu.py')))
    estimates['roi']['bbe'][0]['prior'] = 0.9
    estimates['roi']['risk_matched'] = None
    report = build_report(estimates, keys, ['cell'], 0, dict(roi=0.25, rpn=0.006))
    assert len(report['warnings']) == 3
    assert 'the RoI estimates differ by 0.800 (> 0.05)' in report['warnings'][0]
    assert 'found no unlabeled cell' in report['warnings'][1]
    assert 'BBE: the best bin is the whole cell-score range' in report['warnings'][2]
    assert 'warning: the detector found no unlabeled cell' in format_table(report)
    # such a BBE estimate is not used
    assert report['recommended']['estimator'] == 'label_frequency'
    assert 'no usable estimate' in report['recommended']['reason']
    # on the training images BBE falls low by design: the shares are not compared
    train = build_report(estimates, keys, ['cell'], 0, dict(roi=0.25, rpn=0.006),
                         held_out=False)
    assert len(train['warnings']) == 2 and 'differ' not in train['warnings'][0]


def test_estimate_of_a_multi_class_config_sweeps_the_update_rule(tmp_path):
    """Its cfg_options train with fixed class priors; the sweep varies pi_1."""
    key = 'custom_hooks.0.anchor_prior'
    path = tmp_path / 'multi.json'
    path.write_text(json.dumps(dict(
        stages=dict(roi=dict(key=key)), recommended=dict(roi=0.2, rpn=0.05),
        cfg_options=['model.roi_head.bbox_head.loss_cls.priors=[0.2, 0.1]',
                     'model.rpn_head.loss_cls.prior=0.3', 'custom_hooks=[]'],
        cfg_options_update_rule=[f'{key}=0.2'])))
    estimate = read_estimate(str(path))
    assert (estimate.prior, estimate.key, estimate.sweep_options()) == (0.2, key, [])
    assert estimate.cfg_options[-1] == 'custom_hooks=[]'


def test_written_report_reads_back(tmp_path):
    keys = stage_prior_keys(Config.fromfile(
        str(CONFIGS / 'synthetic' / 'synthetic_keep1_pu.py')))
    report = build_report(_estimates(1), keys, ['cell'], 0, dict(roi=0.25, rpn=0.006))
    path = tmp_path / 'sub' / 'prior.json'
    write_estimate(str(path), report)
    assert json.loads(path.read_text()) == json.loads(json.dumps(report))
    estimate = read_estimate(str(path))
    assert estimate == Estimate(report['recommended']['roi'], keys.roi,
                                report['cfg_options'], None, json.loads(path.read_text()))
    # the options a sweep of the RoI prior keeps: the RPN's own estimate
    assert estimate.sweep_options() == [f'{keys.rpn}={report["recommended"]["rpn"]!r}']


def test_broken_estimate_files_are_named(tmp_path):
    broken = tmp_path / 'broken.json'
    broken.write_text(json.dumps(dict(recommended=dict(roi=0.25))))
    with pytest.raises(ValueError, match="broken.json: no field 'stages'"):
        read_estimate(str(broken))
    broken.write_text(json.dumps(dict(recommended=dict(roi='x'), cfg_options=[],
                                      stages=dict(roi=dict(key='k')))))
    with pytest.raises(ValueError, match="broken.json: recommended.roi = 'x'"):
        read_estimate(str(broken))
    broken.write_text('{"recommended": ')
    with pytest.raises(ValueError, match='broken.json: not valid JSON'):
        read_estimate(str(broken))
