"""tools/sweep_prior.py: grid, keys holding pi, selection, and a tiny real sweep."""
import csv
import json
import os

import pytest
import torch
from mmengine.config import Config

from mmdet_pu.evaluation.prior_selection import check_sweep_config
from tests._data import REPO, make_tiny_coco, pu_model_extra, write_tiny_config
from tests.tools import load_tool

sweep = load_tool('sweep_prior')

PU_EXTRA = pu_model_extra(0.3, 0.3) + "val_evaluator = dict(type='CellDetMetric')\n"
PU_KEYS = ['model.rpn_head.loss_cls.prior', 'model.roi_head.bbox_head.loss_cls.prior']


def tiny_config(tmp_path, extra=PU_EXTRA, max_iters=2):
    data_root = tmp_path / 'data'
    make_tiny_coco(data_root, n_images=2, size=128)
    return write_tiny_config(tmp_path / 'pu_tiny.py', data_root, max_iters=max_iters,
                             extra=extra)


def test_grid_is_inclusive_and_checked():
    assert sweep.candidate_values(value_range=(0.025, 0.05, 0.005)) == [
        0.025, 0.03, 0.035, 0.04, 0.045, 0.05]  # the paper's MITOS grid
    assert sweep.candidate_values(value_range=(0.1, 0.4, 0.05))[-1] == 0.4
    assert sweep.candidate_values(values=[0.2, 0.3]) == [0.2, 0.3]
    with pytest.raises(ValueError, match='0 < prior < 1'):
        sweep.candidate_values(values=[0.5, 1.0])
    with pytest.raises(ValueError, match='repeat'):
        sweep.candidate_values(values=[0.5, 0.5])


def test_default_keys_binary_and_multi_class(tmp_path):
    cfg = Config.fromfile(tiny_config(tmp_path))
    assert sweep.find_prior_keys(cfg) == PU_KEYS
    multi = Config(dict(
        model=dict(rpn_head=dict(loss_cls=dict(type='PULoss', prior=0.6)),
                   roi_head=dict(bbox_head=dict(loss_cls=dict(type='MultiPULoss',
                                                              priors=[0.3, 0.2])))),
        custom_hooks=[dict(type='EMAHook'), dict(type='PriorUpdateHook',
                                                 anchor_prior=0.3)]))
    # pi_1 of the hook; the hook derives the other priors and the RPN prior from it
    assert sweep.find_prior_keys(multi) == ['custom_hooks.1.anchor_prior']
    assert sweep.get_key(multi, 'custom_hooks.1.anchor_prior') == 0.3
    with pytest.raises(KeyError, match="no '5'"):
        sweep.get_key(multi, 'custom_hooks.5.anchor_prior')
    # fixed class priors (no hook): one swept value cannot set them
    fixed = Config.fromfile(str(REPO / 'configs' / 'synthetic' /
                                'synthetic_multi_cap2_mpu.py'))
    with pytest.raises(ValueError, match='fixed per-class priors'):
        sweep.find_prior_keys(fixed)


def test_per_stage_rpn_prior_is_not_swept(tmp_path):
    """An RPN prior that differs from the RoI head's is a per-stage prior: kept."""
    cfg = Config.fromfile(tiny_config(tmp_path))
    cfg.model.rpn_head.loss_cls.prior = 0.006
    assert sweep.find_prior_keys(cfg) == ['model.roi_head.bbox_head.loss_cls.prior']
    shipped = Config.fromfile(str(REPO / 'configs' / 'synthetic' / 'synthetic_keep1_pu.py'))
    assert sweep.find_prior_keys(shipped) == ['model.roi_head.bbox_head.loss_cls.prior']
    paper = Config.fromfile(str(REPO / 'configs' / 'pu' / 'mitos14_vgg16_keep1_pu.py'))
    assert sweep.find_prior_keys(paper) == PU_KEYS


def test_config_checks(tmp_path):
    cfg = Config.fromfile(tiny_config(tmp_path, extra=''))  # CE losses, CocoMetric
    with pytest.raises(ValueError, match='no PULoss prior'):
        check_sweep_config(cfg, 'x.py', sweep.find_prior_keys(cfg))
    with pytest.raises(ValueError, match='must include CellDetMetric'):
        check_sweep_config(cfg, 'x.py', ['model.roi_head.bbox_head.loss_cls.loss_weight'])


def test_band_is_checked():
    with pytest.raises(SystemExit):
        sweep.parse_args(['x.py', '--values', '0.1', '--band', '-0.1'])


def test_dry_run_prints_one_command_per_value(tmp_path, capsys):
    config = tiny_config(tmp_path)
    sweep.main([config, '--values', '0.1', '0.2', '--work-dir', str(tmp_path / 'sw'),
                '--dry-run', '--cfg-options', 'train_cfg.max_iters=3'])
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2
    assert f'--work-dir {tmp_path}/sw/prior_0.2' in lines[1]
    assert lines[1].endswith('train_cfg.max_iters=3 ' + ' '.join(
        f'{k}=0.2' for k in PU_KEYS))
    assert not (tmp_path / 'sw').exists()


def test_tiny_sweep_trains_validates_and_chooses(tmp_path, monkeypatch):
    config = tiny_config(tmp_path)
    work_dir = tmp_path / 'sweep'
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join(
        filter(None, [str(REPO), os.environ.get('PYTHONPATH')])))
    summary = sweep.main([config, '--values', '0.1', '0.4', '--work-dir', str(work_dir)])

    rows = list(csv.DictReader(open(work_dir / 'sweep.csv')))
    assert [float(r['prior']) for r in rows] == [0.1, 0.4]
    chosen = json.loads((work_dir / 'chosen.json').read_text())
    best = max(rows, key=lambda r: (float(r['avg_recall']), -float(r['prior'])))
    assert chosen['prior'] == float(best['prior']) == summary['prior']
    assert chosen['keys'] == PU_KEYS
    assert (work_dir / 'sweep.png').stat().st_size > 0
    for value in (0.1, 0.4):
        run_dir = work_dir / f'prior_{value:g}'
        assert (run_dir / 'cell_metrics' / 'val_per_image.json').exists()
        # the value reached both losses of the trained model
        checkpoint = torch.load(run_dir / 'iter_2.pth', map_location='cpu',
                                weights_only=False)
        state = checkpoint['state_dict']
        assert state['rpn_head.loss_cls.prior'].item() == pytest.approx(value)
        assert state['roi_head.bbox_head.loss_cls.prior'].item() == pytest.approx(value)
    assert chosen['checkpoint'].endswith('iter_2.pth')

    recalls = {float(r['prior']): float(r['avg_recall']) for r in rows}
    assert chosen['band']['values'] == sorted(
        v for v, r in recalls.items() if r >= max(recalls.values()) - 0.02)

    # a second call reuses the finished runs instead of training again; an estimate of
    # 0.25 (--num 1 trains it too) lies in a band that takes every value
    mtime = (work_dir / 'prior_0.1' / 'iter_2.pth').stat().st_mtime
    estimate = _estimate_file(tmp_path / 'estimate.json')
    summary = sweep.main([config, '--estimate', estimate, '--num', '1', '--values', '0.1',
                          '0.4', '--band', '0.999', '--work-dir', str(work_dir)])
    assert (work_dir / 'prior_0.1' / 'iter_2.pth').stat().st_mtime == mtime
    assert summary['band']['values'] == [0.1, 0.25, 0.4]
    assert (work_dir / 'prior_0.25' / 'iter_2.pth').exists()
    assert summary['estimate'] == dict(prior=0.25, file=estimate, in_band=True)
    # the options the chosen run was trained with: the estimate's RPN prior only for
    # the run trained in this call, the tied prior for the reused ones
    option = ['model.rpn_head.loss_cls.prior=0.0061']
    for value, trained in ((0.1, 0.1), (0.25, 0.0061), (0.4, 0.4)):
        assert sweep.trained_options(str(work_dir / f'prior_{value:g}'), config, option) \
            == [f'model.rpn_head.loss_cls.prior={trained!r}']
    assert sweep.trained_options(str(tmp_path / 'data'), config, option) == option  # no dump
    rpn = 0.0061 if summary['prior'] == 0.25 else summary['prior']
    assert summary['cfg_options'] == [f'model.rpn_head.loss_cls.prior={rpn!r}',
                                      f'{PU_KEYS[1]}={summary["prior"]!r}']
    assert json.loads((work_dir / 'chosen.json').read_text())['estimate']['in_band']

    # the same runs chosen by the PU criterion, from the validation counts
    summary = sweep.main([config, '--values', '0.1', '0.4', '--select', 'pu',
                          '--work-dir', str(work_dir)])
    assert summary['selected_by'].startswith("Lee & Liu's")
    criterion = summary['pu_criterion']
    assert set(criterion) == {'0.1', '0.4'} and max(criterion.values()) == 1.0
    assert criterion[f'{summary["prior"]:g}'] == 1.0
    rows = list(csv.DictReader(open(work_dir / 'sweep.csv')))
    assert [float(r['pu_criterion']) for r in rows] == [criterion['0.1'], criterion['0.4']]


def test_narrow_grid_around_an_estimate():
    assert sweep.narrow_grid(0.25) == [0.2, 0.25, 0.3]
    assert sweep.narrow_grid(0.035) == [0.028, 0.035, 0.042]  # the paper's MITOS scale
    assert sweep.narrow_grid(0.2, width=0.1, num=4) == [0.17, 0.19, 0.21, 0.23]
    assert sweep.narrow_grid(0.9) == [0.72, 0.9]  # 1.08 is no prior
    with pytest.raises(ValueError, match='W > 0'):
        sweep.narrow_grid(0.25, width=0)
    with pytest.raises(ValueError, match='0 < prior < 1'):
        sweep.narrow_grid(1.2)
    with pytest.raises(SystemExit):
        sweep.parse_args(['x.py', '--values', '0.1', '--width', '0.1'])
    for args in ([], ['--estimate', 'e.json', '--range', '0.1', '0.2', '0.1']):
        with pytest.raises(SystemExit):
            sweep.parse_args(['x.py', *args])


def _estimate_file(path, key='model.roi_head.bbox_head.loss_cls.prior', prior=0.25):
    path.write_text(json.dumps(dict(
        stages=dict(roi=dict(key=key)), recommended=dict(roi=prior, rpn=0.0061),
        cfg_options=[f'{key}={prior}', 'model.rpn_head.loss_cls.prior=0.0061'])))
    return str(path)


def test_estimate_dry_run_prints_the_narrow_grid(tmp_path, capsys):
    config = tiny_config(tmp_path)
    estimate = _estimate_file(tmp_path / 'estimate.json')
    sweep.main([config, '--estimate', estimate, '--work-dir', str(tmp_path / 'sw'),
                '--dry-run', '--cfg-options', 'train_cfg.max_iters=3'])
    out = capsys.readouterr()
    lines = out.out.strip().splitlines()
    assert 'around the estimate 0.25' in out.err
    assert len(lines) == 3
    # the estimate's RPN prior makes the priors per-stage: only the RoI prior is swept
    for value, line in zip((0.2, 0.25, 0.3), lines):
        assert f'--work-dir {tmp_path}/sw/prior_{value:g} ' in line
        assert line.endswith('--cfg-options model.rpn_head.loss_cls.prior=0.0061 '
                             'train_cfg.max_iters=3 '
                             f'model.roi_head.bbox_head.loss_cls.prior={value!r}')


def test_estimate_file_is_checked(tmp_path):
    config = tiny_config(tmp_path)
    broken = tmp_path / 'broken.json'
    broken.write_text(json.dumps(dict(recommended=dict(roi=0.25))))
    with pytest.raises(ValueError, match="broken.json: no field 'stages'"):
        sweep.main([config, '--estimate', str(broken), '--dry-run'])
    other = _estimate_file(tmp_path / 'multi.json', key='custom_hooks.0.anchor_prior')
    with pytest.raises(ValueError, match='the estimate is for custom_hooks.0.anchor_prior'):
        sweep.main([config, '--estimate', other, '--dry-run'])


def test_estimate_of_a_multi_class_config_sweeps_the_update_rule(tmp_path):
    """Its cfg_options train with fixed class priors; the sweep varies pi_1."""
    key = 'custom_hooks.0.anchor_prior'
    path = tmp_path / 'multi.json'
    path.write_text(json.dumps(dict(
        stages=dict(roi=dict(key=key)), recommended=dict(roi=0.2, rpn=0.05),
        cfg_options=['model.roi_head.bbox_head.loss_cls.priors=[0.2, 0.1]',
                     'model.rpn_head.loss_cls.prior=0.3', 'custom_hooks=[]'],
        cfg_options_update_rule=[f'{key}=0.2'])))
    assert sweep.read_estimate(str(path)) == (0.2, key, [])
