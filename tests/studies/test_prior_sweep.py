"""The prior sweep of studies.prior_sweep (tools/sweep_prior.py): grid,
selection, and a tiny real sweep."""
import csv
import json
import os

import pytest
import torch
from mmengine.config import Config

from mmdet_pu.prior.keys import find_prior_keys
from mmdet_pu.prior.selection import check_sweep_config
from studies.prior_sweep import (candidate_values, dry_run, format_summary, narrow_grid,
                                 plan_sweep, run_sweep, setup_sweep, trained_options)
from tests._cli import run_script
from tests._data import REPO, make_tiny_coco, pu_model_extra, write_tiny_config

PU_EXTRA = pu_model_extra(0.3, 0.3) + "val_evaluator = dict(type='CellDetMetric')\n"
PU_KEYS = ['model.rpn_head.loss_cls.prior', 'model.roi_head.bbox_head.loss_cls.prior']


def tiny_config(tmp_path, extra=PU_EXTRA, max_iters=2):
    data_root = tmp_path / 'data'
    make_tiny_coco(data_root, n_images=2, size=128)
    return write_tiny_config(tmp_path / 'pu_tiny.py', data_root, max_iters=max_iters,
                             extra=extra)


def sweep(config, work_dir, values=None, estimate_file=None, num=3, select='recall',
          band=0.02):
    """What tools/sweep_prior.py does: set up, train what is missing, choose."""
    setup = setup_sweep(config, values, estimate_file=estimate_file, num=num,
                        echo=lambda msg: None)
    rows, summary = run_sweep(config, setup.grid, setup.keys, str(work_dir),
                              setup.cfg_options, select, band, estimate=setup.estimate,
                              echo=lambda msg: None)
    summary['lines'] = format_summary(rows, summary, select)
    return summary


def sweep_cli(*argv):
    return run_script('tools/sweep_prior.py', *argv)


def test_grid_is_inclusive_and_checked():
    assert candidate_values(value_range=(0.025, 0.05, 0.005)) == [
        0.025, 0.03, 0.035, 0.04, 0.045, 0.05]  # the paper's MITOS grid
    assert candidate_values(value_range=(0.1, 0.4, 0.05))[-1] == 0.4
    assert candidate_values(values=[0.2, 0.3]) == [0.2, 0.3]
    with pytest.raises(ValueError, match='0 < prior < 1'):
        candidate_values(values=[0.5, 1.0])
    with pytest.raises(ValueError, match='repeat'):
        candidate_values(values=[0.5, 0.5])


def test_config_checks(tmp_path):
    cfg = Config.fromfile(tiny_config(tmp_path, extra=''))  # CE losses, CocoMetric
    with pytest.raises(ValueError, match='no PULoss prior'):
        check_sweep_config(cfg, 'x.py', find_prior_keys(cfg))
    with pytest.raises(ValueError, match='must include CellDetMetric'):
        check_sweep_config(cfg, 'x.py', ['model.roi_head.bbox_head.loss_cls.loss_weight'])


def test_command_line_dry_run_prints_one_command_per_value(tmp_path):
    config = tiny_config(tmp_path)
    proc = sweep_cli(config, '--values', '0.1', '0.2', '--work-dir', tmp_path / 'sw',
                     '--dry-run', '--cfg-options', 'train_cfg.max_iters=3')
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2
    assert f'--work-dir {tmp_path}/sw/prior_0.2' in lines[1]
    assert lines[1].endswith('train_cfg.max_iters=3 ' + ' '.join(
        f'{k}=0.2' for k in PU_KEYS))
    assert not (tmp_path / 'sw').exists()
    for argv, message in (
            (['--width', '0.1', '--values', '0.1'], '--width and --num need --estimate'),
            ([], 'give the candidates'),
            (['--estimate', 'e.json', '--range', '0.1', '0.2', '0.1'],
             '--range and --estimate do not combine')):
        proc = sweep_cli(config, *argv)
        assert proc.returncode == 2 and message in proc.stderr


@pytest.mark.slow
@pytest.mark.usefixtures('forked_commands')
def test_tiny_sweep_trains_validates_and_chooses(tmp_path, monkeypatch):
    config = tiny_config(tmp_path)
    work_dir = tmp_path / 'sweep'
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join(
        filter(None, [str(REPO), os.environ.get('PYTHONPATH')])))
    summary = sweep(config, work_dir, values=[0.1, 0.4])

    rows = list(csv.DictReader(open(work_dir / 'sweep.csv')))
    assert [float(r['prior']) for r in rows] == [0.1, 0.4]
    chosen = json.loads((work_dir / 'chosen.json').read_text())
    best = max(rows, key=lambda r: (float(r['avg_recall']), -float(r['prior'])))
    assert chosen['prior'] == float(best['prior']) == summary['prior']
    assert summary['lines'][2].startswith(f'chosen prior {summary["prior"]:g} by cell/'
                                          'avg_recall on the validation set')
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
    summary = sweep(config, work_dir, values=[0.1, 0.4], estimate_file=estimate, num=1,
                    band=0.999)
    assert (work_dir / 'prior_0.1' / 'iter_2.pth').stat().st_mtime == mtime
    assert summary['band']['values'] == [0.1, 0.25, 0.4]
    assert (work_dir / 'prior_0.25' / 'iter_2.pth').exists()
    assert summary['estimate'] == dict(prior=0.25, file=estimate, in_band=True)
    # the options the chosen run was trained with: the estimate's RPN prior only for
    # the run trained in this call, the tied prior for the reused ones
    option = ['model.rpn_head.loss_cls.prior=0.0061']
    for value, trained in ((0.1, 0.1), (0.25, 0.0061), (0.4, 0.4)):
        assert trained_options(str(work_dir / f'prior_{value:g}'), config, option) \
            == [f'model.rpn_head.loss_cls.prior={trained!r}']
    assert trained_options(str(tmp_path / 'data'), config, option) == option  # no dump
    rpn = 0.0061 if summary['prior'] == 0.25 else summary['prior']
    assert summary['cfg_options'] == [f'model.rpn_head.loss_cls.prior={rpn!r}',
                                      f'{PU_KEYS[1]}={summary["prior"]!r}']
    assert json.loads((work_dir / 'chosen.json').read_text())['estimate']['in_band']

    # the same runs chosen by the PU criterion, from the validation counts
    summary = sweep(config, work_dir, values=[0.1, 0.4], select='pu')
    assert summary['selected_by'].startswith("Lee & Liu's")
    criterion = summary['pu_criterion']
    assert set(criterion) == {'0.1', '0.4'} and max(criterion.values()) == 1.0
    assert criterion[f'{summary["prior"]:g}'] == 1.0
    rows = list(csv.DictReader(open(work_dir / 'sweep.csv')))
    assert [float(r['pu_criterion']) for r in rows] == [criterion['0.1'], criterion['0.4']]


def test_narrow_grid_around_an_estimate():
    assert narrow_grid(0.25) == [0.2, 0.25, 0.3]
    assert narrow_grid(0.035) == [0.028, 0.035, 0.042]  # the paper's MITOS scale
    assert narrow_grid(0.2, width=0.1, num=4) == [0.17, 0.19, 0.21, 0.23]
    assert narrow_grid(0.9) == [0.72, 0.9]  # 1.08 is no prior
    with pytest.raises(ValueError, match='W > 0'):
        narrow_grid(0.25, width=0)
    with pytest.raises(ValueError, match='0 < prior < 1'):
        narrow_grid(1.2)


def _estimate_file(path, key='model.roi_head.bbox_head.loss_cls.prior', prior=0.25):
    path.write_text(json.dumps(dict(
        stages=dict(roi=dict(key=key)), recommended=dict(roi=prior, rpn=0.0061),
        cfg_options=[f'{key}={prior}', 'model.rpn_head.loss_cls.prior=0.0061'])))
    return str(path)


def test_estimate_dry_run_prints_the_narrow_grid(tmp_path):
    config = tiny_config(tmp_path)
    estimate = _estimate_file(tmp_path / 'estimate.json')
    messages = []
    setup = setup_sweep(config, estimate_file=estimate,
                        cfg_options=['train_cfg.max_iters=3'], echo=messages.append)
    lines = dry_run(plan_sweep(config, setup.grid, setup.keys, str(tmp_path / 'sw'),
                               setup.cfg_options))
    assert 'around the estimate 0.25' in messages[0]
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
        setup_sweep(config, estimate_file=str(broken))
    other = _estimate_file(tmp_path / 'multi.json', key='custom_hooks.0.anchor_prior')
    with pytest.raises(ValueError, match='the estimate is for custom_hooks.0.anchor_prior'):
        setup_sweep(config, estimate_file=other, echo=lambda msg: None)
