"""tools/estimate_prior.py: per-stage keys, the report, and a run on a tiny trained model."""
import json

import pytest
from mmengine.config import Config
from mmengine.runner import Runner

from mmdet_pu.apis.prior_keys import (ROI_PRIOR_KEY, ROI_PRIORS_KEY, RPN_PRIOR_KEY,
                                      stage_prior_keys)
from tests._data import REPO, make_tiny_coco, pu_model_extra, write_tiny_config
from tests.tools import load_tool

estimate = load_tool('estimate_prior')
CONFIGS = REPO / 'configs'

# PU losses, and the val/train data as CellCocoDataset with one labeled cell per image
EXTRA = pu_model_extra(0.05, 0.3) + """
deletion = dict(type='KeepPerPatch', k=1, order='random', seed=0)
train_dataloader['dataset'].update(type='CellCocoDataset', deletion=deletion)
val_dataloader['dataset'].update(type='CellCocoDataset', deletion=deletion)
"""


def test_stage_keys_of_the_shipped_configs():
    binary = Config.fromfile(str(CONFIGS / 'synthetic' / 'synthetic_keep1_pu.py'))
    assert stage_prior_keys(binary) == (ROI_PRIOR_KEY, RPN_PRIOR_KEY, False)
    # multi-class: the hook sets the RPN prior (the sum of the class priors) ...
    multi = Config.fromfile(
        str(CONFIGS / 'synthetic' / 'synthetic_multi_cap2_mpu_prior_update.py'))
    assert stage_prior_keys(multi) == ('custom_hooks.0.anchor_prior', RPN_PRIOR_KEY, True)
    # ... unless told not to: then the RPN has its own prior
    multi.custom_hooks[0].update_rpn_prior = False
    assert stage_prior_keys(multi) == ('custom_hooks.0.anchor_prior', RPN_PRIOR_KEY, False)
    ce = Config.fromfile(str(CONFIGS / 'synthetic' / 'synthetic_keep1_ce.py'))
    with pytest.raises(ValueError, match="ce.py: model.roi_head.bbox_head.loss_cls is "
                       "'CrossEntropyLoss'; expected a PULoss"):
        stage_prior_keys(ce, 'ce.py')


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
    report = estimate.build_report(_estimates(3), keys, ['a', 'b', 'c'], anchor=1,
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
    table = estimate.format_table(report).splitlines()
    assert table[-3:] == [
        'anchor class: b',
        'recommended (risk_matched): --cfg-options model.roi_head.bbox_head.loss_cls.'
        'priors=[0.08, 0.18, 0.28] model.rpn_head.loss_cls.prior=0.00612 custom_hooks=[]',
        "with the PriorUpdateHook's update rule instead: --cfg-options "
        'custom_hooks.0.anchor_prior=0.18']
    # on held-out images the reason says that the training split is its split
    held_out = estimate.build_report(_estimates(3), keys, ['a', 'b', 'c'], 1,
                                     dict(roi=None, rpn=None))
    assert held_out['recommended']['estimator'] == 'risk_matched'
    assert '--split train is its split' in held_out['recommended']['reason']
    # without a risk-matched estimate (a head without a background logit): BBE on
    # held-out images ...
    no_match = estimate.build_report(_estimates(3, risk_matched=False), keys,
                                     ['a', 'b', 'c'], 1, dict(roi=None, rpn=None))
    assert no_match['recommended']['estimator'] == 'bbe'
    assert no_match['recommended']['priors'] == [0.11, 0.21, 0.31]
    # ... the label frequency on the training images; another custom hook: the prior
    # hook cannot be dropped by an option, a note says so; a hook that leaves the RPN
    # prior alone trains it at its estimate with the update rule too
    other_hooks = estimate.build_report(_estimates(3, risk_matched=False),
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
    report = estimate.build_report(estimates, keys, ['a', 'b', 'c'], 0,
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
    report = estimate.build_report(estimates, keys, ['cell'], 0, dict(roi=0.25, rpn=0.006))
    assert len(report['warnings']) == 3
    assert 'the RoI estimates differ by 0.800 (> 0.05)' in report['warnings'][0]
    assert 'found no unlabeled cell' in report['warnings'][1]
    assert 'BBE (cell): the best bin is the whole score range' in report['warnings'][2]
    assert 'warning: the detector found no unlabeled cell' in estimate.format_table(report)
    # such a BBE estimate is not used
    assert report['recommended']['estimator'] == 'label_frequency'
    assert 'no usable estimate' in report['recommended']['reason']
    # on the training images BBE falls low by design: the shares are not compared
    train = estimate.build_report(estimates, keys, ['cell'], 0, dict(roi=0.25, rpn=0.006),
                                  held_out=False)
    assert len(train['warnings']) == 2 and 'differ' not in train['warnings'][0]


def test_even_indices():
    assert estimate.even_indices(10) == list(range(10))
    assert estimate.even_indices(10, 3) == [0, 4, 9]  # 4.5 rounds to even
    assert estimate.even_indices(2, 5) == [0, 1]


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    """A tiny PU model trained for 2 iterations on generated, keep-1 data."""
    tmp_path = tmp_path_factory.mktemp('estimate')
    data_root = tmp_path / 'data'
    make_tiny_coco(data_root, n_images=2, size=128)
    config = write_tiny_config(tmp_path / 'pu_tiny.py', data_root, extra=EXTRA)
    cfg = Config.fromfile(config)
    cfg.work_dir = str(tmp_path / 'work')
    cfg.val_dataloader = cfg.val_cfg = cfg.val_evaluator = None  # training only
    Runner.from_cfg(cfg).train()
    return config, str(tmp_path / 'work' / 'iter_2.pth'), tmp_path


def test_estimate_on_a_tiny_trained_model(trained, capsys):
    config, checkpoint, tmp_path = trained
    out = tmp_path / 'estimate.json'
    report = estimate.main([config, checkpoint, '--oracle', '--out', str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    assert 'recommended (' in capsys.readouterr().out
    assert report['images'] == 2 and report['classes'] == ['cell0']
    assert report['trained_with']['roi'] == pytest.approx(0.3)
    assert report['trained_with']['rpn'] == pytest.approx(0.05)

    roi, rpn = report['stages']['roi'], report['stages']['rpn']
    assert roi['key'] == ROI_PRIOR_KEY and rpn['key'] == RPN_PRIOR_KEY
    # one labeled cell per image (keep-1) of the 6 generated ones
    assert roi['labeled_cells'] == {'cell0': 2}
    assert roi['estimates']['oracle']['c_all'] == pytest.approx(2 / 12)
    assert roi['n'] == roi['n_p']['cell0'] + roi['n_u'] <= 2 * 128
    assert rpn['n'] == rpn['n_p'] + rpn['n_u'] <= 2 * 256
    # the pseudo-complete cells hold at least the labeled ones: no estimate is below
    # the share of labeled positives; the complete cells at least as many positives
    labeled_share = roi['n_p']['cell0'] / roi['n']
    for name in ('label_frequency', 'oracle'):
        assert labeled_share <= roi['estimates'][name]['value'] <= 1
        assert rpn['n_p'] / rpn['n'] <= rpn['estimates'][name]['value'] <= 1
    assert roi['estimates']['oracle']['value'] > labeled_share
    assert rpn['estimates']['oracle']['value'] > rpn['n_p'] / rpn['n']
    bbe = roi['estimates']['bbe']['per_class']['cell0']
    assert bbe['prior'] is None or labeled_share <= bbe['prior'] <= 1
    # the risk-matched priors (pseudo-complete and complete cells) lie between the
    # labeled share and 1; estimated on the training images (the default split)
    for name in ('risk_matched', 'risk_matched_oracle'):
        matched = roi['estimates'][name]['per_class']['cell0']
        assert labeled_share == pytest.approx(matched['rho'])
        assert labeled_share <= matched['prior'] < 1
    assert report['split'] == 'train'
    assert report['recommended']['estimator'] == 'risk_matched'
    recommended = report['recommended']['estimator']
    assert report['recommended']['roi'] == float(
        f'{roi["estimates"][recommended]["value"]:.3g}')
    assert report['cfg_options'] == [
        f'{ROI_PRIOR_KEY}={report["recommended"]["roi"]!r}',
        f'{RPN_PRIOR_KEY}={report["recommended"]["rpn"]!r}']

    # every detection a cell: the pseudo-complete cells only grow, so do the shares
    low = estimate.main([config, checkpoint, '--score-thr', '0'])
    low_roi = low['stages']['roi']
    assert low_roi['n'] == roi['n'] and low_roi['n_p'] == roi['n_p']  # same samples
    assert sum(low_roi['pseudo_complete_cells'].values()) >= sum(
        roi['pseudo_complete_cells'].values())
    assert low_roi['estimates']['label_frequency']['value'] >= \
        roi['estimates']['label_frequency']['value']
    assert low['stages']['rpn']['estimates']['label_frequency']['value'] >= \
        rpn['estimates']['label_frequency']['value']


def test_oracle_needs_a_cell_dataset(trained):
    config, checkpoint, _ = trained
    with pytest.raises(ValueError, match='train_dataloader.dataset is a CocoDataset: '
                       '--oracle needs a CellCocoDataset'):
        estimate.main([config, checkpoint, '--oracle', '--cfg-options',
                       'train_dataloader.dataset.type=CocoDataset'])
