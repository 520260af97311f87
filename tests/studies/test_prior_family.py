"""The study over the synthetic regimes (studies.prior_family,
tools/prior_family.py), end to end on a tiny config: provisional, oracle, grid, workflow,
summary."""
import json
import os

import pytest

from studies import prior_family as family
from tests._data import REPO, make_tiny_coco, pu_model_extra, write_tiny_config


@pytest.mark.slow
@pytest.mark.usefixtures('forked_commands')
def test_tiny_family_runs_every_rule_and_tabulates(tmp_path, monkeypatch):
    data_root = tmp_path / 'data'
    make_tiny_coco(data_root, n_images=2, size=128)
    configs = tmp_path / 'configs'
    configs.mkdir()
    write_tiny_config(configs / 'pu_tiny.py', data_root, extra=pu_model_extra(0.05, 0.3) + """
val_evaluator = dict(type='CellDetMetric')
test_evaluator = val_evaluator
deletion = dict(type='KeepPerPatch', k=1, order='random', seed=0)
train_dataloader['dataset'].update(type='CellCocoDataset')
val_dataloader['dataset'].update(type='CellCocoDataset')
""")
    monkeypatch.setattr(family, 'REGIMES', dict(tiny='pu_tiny.py'))
    monkeypatch.setattr(family, 'GRID_FACTORS', (0.5, 2.0))
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join(
        filter(None, [str(REPO), os.environ.get('PYTHONPATH')])))
    work = tmp_path / 'family'
    family.run_regime('tiny', str(configs), str(work), [0], jobs=2, echo=lambda m: None)

    regime = work / 'tiny'
    oracle = json.loads((regime / 'oracle.json').read_text())
    assert oracle['checkpoint'] == str(regime / 'provisional' / 'seed0' / 'iter_2.pth')
    assert 'oracle' in oracle['stages']['roi']['estimates']
    tested = sorted(p.parent.parent.relative_to(regime).as_posix()
                    for p in regime.glob('grid*/seed*/cell_metrics/test_per_image.json'))
    assert tested == ['grid0/seed0', 'grid1/seed0']
    fit_dir = regime / 'fit' / 'seed0'  # the workflow reused the provisional run
    assert os.path.samefile(fit_dir / 'provisional', regime / 'provisional' / 'seed0')
    fitted = json.loads((fit_dir / 'fit_prior.json').read_text())
    assert fitted['seed'] == 0 and fitted['chosen'] == 'distilled'

    summary = family.summarize('tiny', str(work), [0])
    assert [g['seeds'] for g in summary['grid']] == [[0], [0]]
    assert set(summary['rules']) == {'workflow', 'provisional', 'recall over the grid',
                                     'Lee & Liu over the grid'}
    # the workflow's row is the detector the fit returns: the one distilled from its
    # fused detector
    assert summary['rules']['workflow']['f1'][0] == pytest.approx(
        family.test_measures(str(fit_dir / 'distilled'))['f1'])
    text = family.write_family(str(work), [summary])
    assert '| tiny |' in text and (work / 'results.json').is_file()
    assert json.loads((work / 'results.json').read_text())['results'][0]['regime'] == 'tiny'
    # a seed not run yet: the rules and the best value count the seeds that are there
    partial = family.summarize('tiny', str(work), [0, 1])
    assert partial['best']['f1']['seeds'] == 1
    assert partial['best']['f1']['value'] == summary['best']['f1']['value']
    assert {rule: row['seeds'] for rule, row in partial['rules'].items()} == \
        {rule: row['seeds'] for rule, row in summary['rules'].items()}
    assert partial['rules']['workflow']['seeds'] == 1
    assert '| 1 |' in family.format_markdown([partial])
    with pytest.raises(FileNotFoundError):
        family.summarize('missing', str(work), [0])


def test_the_grid_trains_every_value_at_the_first_seed_and_the_best_ones_after(
        tmp_path, monkeypatch):
    report = dict(classes=['cell'], cfg_options=[], stages=dict(
        roi=dict(key='model.roi_head.bbox_head.loss_cls.prior', estimates=dict(
            oracle=dict(per_class=dict(cell=dict(prior=0.25))))),
        rpn=dict(key='model.rpn_head.loss_cls.prior',
                 estimates=dict(oracle=dict(value=0.01)))))
    work = str(tmp_path)
    runs = family.grid_runs('c.py', work, report, [3, 4, 5])
    assert {i: len(r) for i, r in runs.items()} == {i: 1 for i in range(6)}
    assert runs[3][0].options == ['model.roi_head.bbox_head.loss_cls.prior=0.25',
                                  'model.rpn_head.loss_cls.prior=0.01', 'randomness.seed=3']
    # once the first seed is tested, its three best values are trained at the others
    f1 = [0.5, 0.9, 0.95, 0.9, 0.7, 0.2]
    for i, value in enumerate(f1):
        dump = tmp_path / f'grid{i}' / 'seed3' / 'cell_metrics' / 'test_per_image.json'
        dump.parent.mkdir(parents=True)
        dump.write_text('{}')
    monkeypatch.setattr(family, 'test_measures',
                        lambda run_dir: dict(f1=f1[int(os.path.basename(
                            os.path.dirname(run_dir))[len('grid'):])]))
    runs = family.grid_runs('c.py', work, report, [3, 4, 5])
    assert {i: len(r) for i, r in runs.items()} == {0: 1, 1: 3, 2: 3, 3: 3, 4: 1, 5: 1}
    assert runs[3][2].work_dir == os.path.join(work, 'grid3', 'seed5')
