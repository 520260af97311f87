"""The priors of a tiny trained model estimated from its checkpoint
(tools/estimate_prior.py's computation), and the split's images it samples."""
import json
import os
import subprocess
import sys

import pytest
from mmengine.config import Config

from mmdet_pu.engine.launch import build_runner
from mmdet_pu.prior.estimate_file import format_table, write_estimate
from mmdet_pu.prior.from_checkpoint import anchor_class, estimate_from_checkpoint
from mmdet_pu.prior.keys import ROI_PRIOR_KEY, RPN_PRIOR_KEY
from mmdet_pu.prior.samples import even_indices
from tests._data import REPO, make_tiny_coco, pu_model_extra, write_tiny_config

# PU losses, and the val/train data as CellCocoDataset with one labeled cell per image
EXTRA = pu_model_extra(0.05, 0.3) + """
deletion = dict(type='KeepPerPatch', k=1, order='random', seed=0)
train_dataloader['dataset'].update(type='CellCocoDataset')
val_dataloader['dataset'].update(type='CellCocoDataset')
"""


def test_even_indices():
    assert even_indices(10) == list(range(10))
    assert even_indices(10, 3) == [0, 4, 9]  # 4.5 rounds to even
    assert even_indices(2, 5) == [0, 1]


@pytest.mark.parametrize('value, message', [
    (-1, r'custom_hooks\.1\.anchor_class: expected a class name or an index in 0\.\.2 '
         r'.*got -1'),
    (5, r'custom_hooks\.1\.anchor_class: .*got 5'),
    ('x', r"custom_hooks\.1\.anchor_class 'x' is not one of")])
def test_the_anchor_class_is_checked_as_the_hook_checks_it(value, message):
    """The estimate resolves the anchor as PriorUpdateHook does: an index out of range
    is refused, not taken from the end (-1) or left to fail later (5 of 3)."""
    cfg = Config(dict(custom_hooks=[dict(type='EMAHook'),
                                    dict(type='PriorUpdateHook', anchor_class=value)]))
    classes = ['cell0', 'cell1', 'cell2']
    with pytest.raises(ValueError, match=message):
        anchor_class(cfg, 1, classes)
    cfg.custom_hooks[1].anchor_class = 'cell2'
    assert anchor_class(cfg, 1, classes) == 2


@pytest.fixture(scope='module')
def trained(module_tmp_path):
    """A tiny PU model trained for 2 iterations on generated, keep-1 data."""
    tmp_path = module_tmp_path
    data_root = tmp_path / 'data'
    make_tiny_coco(data_root, n_images=2, size=128)
    config = write_tiny_config(tmp_path / 'pu_tiny.py', data_root, extra=EXTRA)
    cfg = Config.fromfile(config)
    cfg.work_dir = str(tmp_path / 'work')
    cfg.val_dataloader = cfg.val_cfg = cfg.val_evaluator = None  # training only
    build_runner(cfg).train()
    return config, str(tmp_path / 'work' / 'iter_2.pth'), tmp_path


def test_estimate_on_a_tiny_trained_model(trained):
    config, checkpoint, tmp_path = trained
    out = tmp_path / 'estimate.json'
    report = estimate_from_checkpoint(config, checkpoint, oracle=True)
    write_estimate(str(out), report)
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    assert 'recommended (' in format_table(report)
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
    low = estimate_from_checkpoint(config, checkpoint, score_thr=0)
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
        estimate_from_checkpoint(config, checkpoint, oracle=True, cfg_options={
            'train_dataloader.dataset.type': 'CocoDataset', 'deletion': None})


def test_command_line_writes_the_report(trained, tmp_path):
    config, checkpoint, _ = trained
    out = tmp_path / 'prior.json'
    proc = subprocess.run(
        [sys.executable, 'tools/estimate_prior.py', config, checkpoint, '--split', 'val',
         '--num-images', '1', '--out', str(out)], cwd=REPO, capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert (report['split'], report['images']) == ('val', 1)
    assert format_table(report) in proc.stdout
    assert f'estimates written to {out}' in proc.stdout
