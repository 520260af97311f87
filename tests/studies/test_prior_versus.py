"""The estimate against the sweep (studies.prior_versus,
tools/estimate_vs_sweep.py): the per-seed comparison, the summary, and a tiny real study."""
import json
import math
import os

import numpy as np
import pytest
import torch

from studies import prior_versus as study
from tests._cli import run_script
from tests._data import REPO, make_tiny_coco, pu_model_extra, write_tiny_config

ROI_KEY = 'model.roi_head.bbox_head.loss_cls.prior'
RPN_KEY = 'model.rpn_head.loss_cls.prior'


def row(prior, val_recall, test_f1, tp, detections, num_gt=40):
    return dict(prior=prior, run_dir=f'run_{prior:g}', avg_recall=val_recall,
                test_f1=test_f1, counts=dict(tp=np.array([tp]),
                                             detections=np.array([detections]),
                                             num_gt=np.array([num_gt]), num_images=40))


# a keep-1-like sweep: recall rises with the prior, test F1 falls past 0.25
SWEEP = [row(0.2, 0.850, 0.950, 34, 560), row(0.25, 0.925, 0.970, 37, 600),
         row(0.3, 0.950, 0.949, 38, 680), row(0.35, 1.000, 0.934, 40, 760)]


def test_an_estimate_below_the_band_with_a_better_f1():
    estimate = row(0.281, 0.950, 0.968, 38, 620)
    result = study.compare_seed(SWEEP, estimate, 0.25, band=0.02, f1_tolerance=0.02)
    assert result['chosen'] == dict(prior=0.35, test_f1=0.934)
    assert result['band']['values'] == [0.35]
    e = result['estimate']
    assert (e['prior'], e['val_recall'], e['test_f1']) == (0.281, 0.950, 0.968)
    assert not e['in_band_value'] and not e['in_band_recall'] and not e['agrees']
    assert e['f1_gap'] == pytest.approx(0.034) and e['f1_agrees']
    # Lee & Liu: 38^2/620 > 37^2/600, the estimate's run
    assert result['pu_choice'] == dict(e, run='estimate')
    assert result['provisional'] == dict(prior=0.25, test_f1=0.970)
    assert result['hindsight'] == dict(prior=0.25, test_f1=0.970)
    assert result['sweep']['0.35'] == dict(val_recall=1.0, test_f1=0.934, run_dir='run_0.35')


def test_band_by_value_and_by_recall_can_differ():
    # a wide band (0.3-0.35) holds 0.32 by value; its run's recall misses the band
    estimate = row(0.32, 0.925, 0.900, 37, 900)
    result = study.compare_seed(SWEEP, estimate, 0.25, band=0.05, f1_tolerance=0.02)
    assert result['band']['values'] == [0.3, 0.35]
    e = result['estimate']
    assert e['in_band_value'] and not e['in_band_recall']
    assert e['f1_gap'] == pytest.approx(-0.034) and not e['f1_agrees'] and not e['agrees']
    # the provisional 0.25 is kept: below the band, F1 0.036 above the choice's
    pu = result['pu_choice']
    assert (pu['run'], pu['prior'], pu['in_band_value']) == ('provisional', 0.25, False)
    assert pu['f1_gap'] == pytest.approx(0.036) and pu['f1_agrees']
    # a value outside the band whose run recalls as well as the best
    estimate = row(0.45, 1.0, 0.920, 40, 900)
    e = study.compare_seed(SWEEP, estimate, 0.25, band=0.02, f1_tolerance=0.02)['estimate']
    assert not e['in_band_value'] and e['in_band_recall']
    assert e['f1_gap'] == pytest.approx(-0.014) and e['f1_agrees']
    # in the band by value, within the F1 tolerance: agrees
    estimate = row(0.34, 1.0, 0.930, 40, 760)
    assert study.compare_seed(SWEEP, estimate, 0.25, band=0.05, f1_tolerance=0.02
                              )['estimate']['agrees']
    # untrained detectors: no labeled cell found, Lee & Liu cannot choose
    blind = [dict(r, counts=dict(r['counts'], tp=np.array([0]))) for r in SWEEP]
    result = study.compare_seed(blind, dict(estimate, counts=blind[0]['counts']), 0.25,
                                band=0.02, f1_tolerance=0.02)
    assert result['pu_choice'] is None
    summary = study.summarize({'0': result}, num_values=4)
    assert 'provisional or estimate, PU criterion' not in summary['test_f1']
    assert summary['pu_choice'] == dict(in_band_value=0, in_band_recall=0, f1_agrees=0,
                                        agrees=0)


def test_summary_counts_seeds_and_costs_trainings():
    per_seed = {
        '0': study.compare_seed(SWEEP, row(0.281, 0.95, 0.968, 38, 620), 0.25, 0.02, 0.02),
        '1': study.compare_seed(SWEEP, row(0.34, 1.0, 0.940, 40, 740), 0.25, 0.02, 0.02)}
    summary = study.summarize(per_seed, num_values=4)
    f1 = summary['test_f1']
    assert f1['estimate']['mean'] == pytest.approx(0.954)
    assert f1['estimate']['std'] == pytest.approx(np.std([0.968, 0.940], ddof=1))
    assert f1['estimate']['trainings'] == 2
    assert f1['sweep, recall choice'] == dict(trainings=4, seeds=2, mean=0.934, std=0.0)
    assert f1['provisional prior']['trainings'] == 1
    # seed 1: 0.34 is outside the band by value (0.35 only), inside by recall
    assert summary['estimate'] == dict(in_band_value=0, in_band_recall=1, f1_agrees=2,
                                       agrees=0)
    assert summary['seeds'] == 2
    results = dict(config='c.py', seeds=[0, 1], values=[0.2, 0.25, 0.3, 0.35],
                   provisional=0.25, band=0.02, f1_tolerance=0.02, per_seed=per_seed,
                   summary=summary)
    text = study.format_markdown(results)
    assert '| 0 | 0.850 / 0.950 | 0.925 / 0.970 | 0.950 / 0.949 | 1.000 / 0.934 | ' \
        '0.281: 0.950 / 0.968 | 0.35 (0.934) | 0.35-0.35 | no / no, +0.034 | ' \
        'estimate 0.281 (0.968) | no / no, +0.034 |' in text
    assert '| estimate | 2 | 2 | 0.954 ± 0.020 |' in text
    assert 'The estimate: in the recall band (within 0.02) by value 0 of 2 seeds, by ' \
        'validation recall 1 of 2' in text


def test_a_single_seed_has_no_spread():
    """One seed gives a mean and no std (null in results.json), not a std of 0."""
    per_seed = {'0': study.compare_seed(SWEEP, row(0.281, 0.95, 0.968, 38, 620), 0.25,
                                        0.02, 0.02)}
    summary = study.summarize(per_seed, num_values=4)
    assert summary['test_f1']['estimate'] == dict(trainings=2, seeds=1, mean=0.968,
                                                  std=None)
    results = dict(config='c.py', seeds=[0], values=[0.2, 0.25, 0.3, 0.35],
                   provisional=0.25, band=0.02, f1_tolerance=0.02, per_seed=per_seed,
                   summary=summary)
    text = study.format_markdown(results)
    assert '| estimate | 2 | 1 | 0.968 |' in text and '±' not in text.split('seeds:')[-1]
    # a seed whose run has no test F1 is left out of the mean, not made NaN
    nan_seed = study.compare_seed(SWEEP, row(0.34, 1.0, math.nan, 40, 740), 0.25, 0.02,
                                  0.02)
    summary = study.summarize(dict(per_seed, **{'1': nan_seed}), num_values=4)
    assert summary['test_f1']['estimate'] == dict(trainings=2, seeds=1, mean=0.968,
                                                  std=None)


def test_input_errors_are_clear(tmp_path):
    config = str(REPO / 'configs/synthetic/synthetic_keep1_pu.py')
    proc = run_script('tools/estimate_vs_sweep.py', config, '--seeds', '0', '--values',
                      '1.2')
    assert proc.returncode == 2
    assert 'prior 1.2: expected a value in (0, 1)' in proc.stderr
    with pytest.raises(ValueError, match='no PULoss prior and no PriorUpdateHook'):
        study.run_study(str(REPO / 'configs/synthetic/synthetic_keep1_ce.py'), [0], [0.2],
                        str(tmp_path))
    # a config that cannot select fails before any training starts
    with pytest.raises(ValueError, match='must include CellDetMetric'):
        study.run_study(config, [0], [0.2], str(tmp_path),
                        cfg_options=['val_evaluator.type=CocoMetric'])
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
@pytest.mark.usefixtures('forked_commands')
def test_tiny_study_trains_estimates_and_compares(tmp_path, monkeypatch):
    """One seed, the sweep {0.2, 0.3 (provisional, the config's)}, 2 iterations each."""
    data_root = tmp_path / 'data'
    make_tiny_coco(data_root, n_images=2, size=128)
    config = write_tiny_config(
        tmp_path / 'pu_tiny.py', data_root, extra=pu_model_extra(0.3, 0.3)
        + "val_evaluator = dict(type='CellDetMetric')\ntest_evaluator = val_evaluator\n")
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join(
        filter(None, [str(REPO), os.environ.get('PYTHONPATH')])))
    work = tmp_path / 'study'

    def run():
        return study.run_study(config, [0], [0.2], str(work), jobs=2,
                               estimate_options=['--split', 'val'], echo=lambda msg: None)

    results = run()

    assert results['keys'] == [RPN_KEY, ROI_KEY] and results['provisional'] == 0.3
    assert results['values'] == [0.2, 0.3]
    seed = work / 'seed0'
    estimate = json.loads((seed / 'prior.json').read_text())
    # the estimate was made from the provisional run's checkpoint ...
    assert estimate['checkpoint'] == str(seed / 'prior_0.3' / 'iter_2.pth')
    assert estimate['trained_with']['roi'] == pytest.approx(0.3)
    assert estimate['split'] == 'val'  # --estimate-options
    # ... and the estimate run trained with its recommendation, in both stages
    state = torch.load(seed / 'estimate' / 'iter_2.pth', map_location='cpu',
                       weights_only=False)['state_dict']
    recommended = estimate['recommended']
    assert state['roi_head.bbox_head.loss_cls.prior'].item() == pytest.approx(
        recommended['roi'])
    assert state['rpn_head.loss_cls.prior'].item() == pytest.approx(recommended['rpn'])
    for value in (0.2, 0.3):
        state = torch.load(seed / f'prior_{value:g}' / 'iter_2.pth', map_location='cpu',
                           weights_only=False)['state_dict']
        assert state['roi_head.bbox_head.loss_cls.prior'].item() == pytest.approx(value)

    compared = results['per_seed']['0']
    assert compared['estimate']['prior'] == recommended['roi']
    assert compared['estimate']['run_dir'] == str(seed / 'estimate')
    for name, run_dir in (('0.2', seed / 'prior_0.2'), ('0.3', seed / 'prior_0.3')):
        test = json.loads((run_dir / 'cell_metrics' / 'test_per_image.json').read_text())
        val = json.loads((run_dir / 'cell_metrics' / 'val_per_image.json').read_text())
        f1 = test['metrics']['cell/avg_f1']
        got = compared['sweep'][name]
        assert got['run_dir'] == str(run_dir)
        assert got['val_recall'] == val['metrics']['cell/avg_recall']
        expected_f1 = f1 if f1 is not None else pytest.approx(math.nan, nan_ok=True)
        assert got['test_f1'] == expected_f1
    assert compared['chosen']['prior'] in (0.2, 0.3)
    text = study.write_study(str(work), results)
    assert json.loads((work / 'results.json').read_text())['summary']['seeds'] == 1
    assert (work / 'results.md').read_text() == text == study.format_markdown(results)
    assert (seed / 'estimate_prior.log').read_text().startswith('\n$ ')

    # a second call trains and estimates nothing again
    mtimes = {p: p.stat().st_mtime for p in (seed / 'prior.json',
                                             seed / 'estimate' / 'iter_2.pth')}
    assert json.dumps(run()['per_seed']) == json.dumps(results['per_seed'])
    assert {p: p.stat().st_mtime for p in mtimes} == mtimes
