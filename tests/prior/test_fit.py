"""The prior fit (mmdet_pu.prior.fit, tools/fit_prior.py): candidate priors from an
estimate, and a tiny real fit end to end."""
import json
import os
import subprocess
import sys

import pytest
import torch

from mmdet_pu.prior import fit
from tests._data import REPO, make_tiny_coco, pu_model_extra, write_tiny_config

ROI_KEY = 'model.roi_head.bbox_head.loss_cls.prior'
ROI_PRIORS_KEY = 'model.roi_head.bbox_head.loss_cls.priors'
RPN_KEY = 'model.rpn_head.loss_cls.prior'


def report(classes, bbe, label_frequency, rpn, roi_key=ROI_KEY, extra=()):
    """An estimate report with the fields the fit reads."""
    def per_class(values):
        return dict(per_class={c: dict(prior=v) for c, v in zip(classes, values)})
    return dict(
        classes=list(classes),
        stages=dict(roi=dict(key=roi_key, estimates=dict(
                        bbe=per_class(bbe), label_frequency=per_class(label_frequency))),
                    rpn=dict(key=RPN_KEY, estimates=dict(label_frequency=dict(value=rpn)))),
        cfg_options=[f'{roi_key}=0.1', f'{RPN_KEY}=0.01', *extra])


def test_scaling_in_odds_stays_in_the_unit_interval():
    assert fit.scale_odds(0.25, 1) == pytest.approx(0.25)
    assert fit.scale_odds(0.25, 3) == pytest.approx(0.5)  # odds 1/3 -> 1
    assert fit.scale_odds(0.9, 100) < 1 and fit.scale_odds(0.001, 0.01) > 0


def test_candidates_scale_every_stage_and_keep_the_other_options():
    binary = report(['cell'], [0.25], [0.4], 0.01)
    assert fit.estimated_shares(binary) == dict(roi=[0.25], rpn=0.01)
    options = fit.candidate_options(binary, 3)
    assert options == {ROI_KEY: 0.5, RPN_KEY: pytest.approx(0.0294, abs=1e-4)}
    # several classes: BBE per class, the label frequency where BBE has none; the
    # report's other options (a multi-class fit leaves out the update hook) are kept
    multi = report(['a', 'b', 'c'], [0.3, None, 0.2], [0.35, 0.25, 0.22], 0.05,
                   roi_key=ROI_PRIORS_KEY, extra=['custom_hooks=[]'])
    assert fit.estimated_shares(multi)['roi'] == [0.3, 0.25, 0.2]
    options = fit.candidate_options(multi, 2)
    assert options['custom_hooks'] == '[]'
    priors = options[ROI_PRIORS_KEY]
    assert sum(priors) == pytest.approx(fit.MAX_TOTAL_PRIOR, abs=1e-3)  # capped below 1
    assert priors == sorted(priors, reverse=True)  # proportions kept
    strings = fit.option_strings(options)
    assert strings[0] == 'custom_hooks=[]'
    assert strings[1] == f'{ROI_PRIORS_KEY}=[{",".join(map(str, priors))}]'  # no spaces


def stage_report(classes, stages, detector='cascade'):
    """A dense or cascade estimate report: ``stages`` maps a stage name to its key and
    its label frequency (a list per class; one value for the RPN)."""
    def entry(key, shares):
        if not isinstance(shares, list):
            return dict(key=key, estimates=dict(label_frequency=dict(value=shares)))
        return dict(key=key, estimates=dict(label_frequency=dict(
            value=shares if len(shares) > 1 else shares[0],
            per_class={c: dict(prior=v) for c, v in zip(classes, shares)})))
    return dict(detector=detector, classes=list(classes),
                stages={name: entry(*stage) for name, stage in stages.items()},
                cfg_options=[f'{key}=0.1' for key, _ in stages.values() if key])


def test_candidates_of_dense_and_cascade_stages():
    stages = [f'model.roi_head.bbox_head.{i}.loss_cls.prior' for i in range(3)]
    cascade = stage_report(['cell'], dict(rpn=(RPN_KEY, 0.004), roi0=(stages[0], [0.25]),
                                          roi1=(stages[1], [0.5]), roi2=(None, [0.6])))
    # the label frequency of every stage (no BBE); a stage without a key is left out
    assert fit.estimated_shares(cascade) == dict(rpn=0.004, roi0=[0.25], roi1=[0.5],
                                                 roi2=[0.6])
    assert fit.candidate_options(cascade, 3) == {
        RPN_KEY: pytest.approx(0.01190, abs=1e-5), stages[0]: 0.5, stages[1]: 0.75}
    dense_key = 'model.bbox_head.loss_cls.priors'
    dense = stage_report(['a', 'b'], dict(head=(dense_key, [0.00666, 0.00123])), 'dense')
    options = fit.candidate_options(dense, 2)
    # four significant digits: a dense head's priors are small
    assert options == {dense_key: [0.01323, 0.002457]}
    assert fit.option_strings(options) == [f'{dense_key}=[0.01323,0.002457]']


def test_command_line_input_errors(tmp_path):
    config = str(REPO / 'configs/synthetic/synthetic_keep1_pu.py')
    for args, message in ((['--factors', '0.5', '-1'], 'expected values > 0'),
                          (['--factors', '2', '2'], '--factors repeat'),
                          (['--cfg-options', 'randomness.seed=3'], 'set by --seeds')):
        proc = subprocess.run([sys.executable, 'tools/fit_prior.py', config, *args,
                               '--work-dir', str(tmp_path)], cwd=REPO, text=True,
                              capture_output=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
        assert proc.returncode == 2 and message in proc.stderr
    assert not any(tmp_path.iterdir())


def test_tiny_fit_trains_estimates_chooses_and_resumes(tmp_path, monkeypatch):
    """Three trainings of 2 iterations: the provisional and the estimate x 0.5 and x 2."""
    data_root = tmp_path / 'data'
    make_tiny_coco(data_root, n_images=2, size=128)
    config = write_tiny_config(
        tmp_path / 'pu_tiny.py', data_root, extra=pu_model_extra(0.05, 0.3)
        + "val_evaluator = dict(type='CellDetMetric')\ntest_evaluator = val_evaluator\n")
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join(
        filter(None, [str(REPO), os.environ.get('PYTHONPATH')])))
    work = tmp_path / 'fit'
    summary = fit.fit_prior(config, str(work), factors=(0.5, 2.0), jobs=2,
                            echo=lambda msg: None)

    estimate = json.loads((work / 'estimate.json').read_text())
    assert estimate['checkpoint'] == str(work / 'provisional' / 'iter_2.pth')
    shares = fit.estimated_shares(estimate)
    names = [row['name'] for row in summary['trainings']]
    assert names == ['provisional', 'x0.5', 'x2']
    for factor in (0.5, 2):
        state = torch.load(work / f'x{factor:g}' / 'iter_2.pth', map_location='cpu',
                           weights_only=False)['state_dict']
        assert state['roi_head.bbox_head.loss_cls.prior'].item() == pytest.approx(
            fit.scale_odds(shares['roi'][0], factor), abs=1e-4)
        assert state['rpn_head.loss_cls.prior'].item() == pytest.approx(
            fit.scale_odds(shares['rpn'], factor), abs=1e-5)
    chosen = next(row for row in summary['trainings'] if row['name'] == summary['chosen'])
    assert os.path.samefile(work / 'fit_prior.pth', chosen['checkpoint'])
    written = json.loads((work / 'fit_prior.json').read_text())
    assert written['chosen'] == summary['chosen'] and written['reason']
    assert (work / 'fit_prior.png').read_bytes()[:4] == b'\x89PNG'
    print(fit.format_summary(summary))  # renders

    mtimes = {p: p.stat().st_mtime for p in work.glob('*/iter_2.pth')}
    again = fit.fit_prior(config, str(work), factors=(0.5, 2.0), echo=lambda msg: None)
    assert again['chosen'] == summary['chosen']
    assert {p: p.stat().st_mtime for p in mtimes} == mtimes  # nothing trained again
