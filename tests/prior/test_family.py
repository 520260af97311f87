"""The study over the synthetic regimes (mmdet_pu.prior.family, tools/prior_family.py),
end to end on a tiny config: provisional, oracle, grid, workflow, summary."""
import json
import os

import pytest

from mmdet_pu.prior import family
from tests._data import REPO, make_tiny_coco, pu_model_extra, write_tiny_config


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
    monkeypatch.setattr(family, 'CENTRAL', (1, ))
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join(
        filter(None, [str(REPO), os.environ.get('PYTHONPATH')])))
    work = tmp_path / 'family'
    family.run_regime('tiny', str(configs), str(work), [0, 1], jobs=2, echo=lambda m: None)

    regime = work / 'tiny'
    oracle = json.loads((regime / 'oracle.json').read_text())
    assert oracle['checkpoint'] == str(regime / 'provisional' / 'seed0' / 'iter_2.pth')
    assert 'oracle' in oracle['stages']['roi']['estimates']
    # the grid: both values at seed 0, the central one (index 1) at seed 1
    tested = sorted(p.parent.parent.relative_to(regime).as_posix()
                    for p in regime.glob('grid*/seed*/cell_metrics/test_per_image.json'))
    assert tested == ['grid0/seed0', 'grid1/seed0', 'grid1/seed1']
    for seed in (0, 1):  # the workflow reused the provisional run of its seed
        fit_dir = regime / 'fit' / f'seed{seed}'
        assert os.path.samefile(fit_dir / 'provisional', regime / 'provisional' / f'seed{seed}')
        assert json.loads((fit_dir / 'fit_prior.json').read_text())['seed'] == seed

    summary = family.summarize('tiny', str(work), [0, 1])
    assert [g['seeds'] for g in summary['grid']] == [[0], [0, 1]]
    assert summary['best']['f1']['index'] == 1  # only values trained at every seed compete
    assert set(summary['rules']) == {'workflow', 'provisional', 'recall over the grid',
                                     'Lee & Liu over the grid'}
    workflow = summary['rules']['workflow']
    assert len(workflow['run_dirs']) == 2 and workflow['f1'][0] is not None
    text = family.write_family(str(work), [summary])
    assert '| tiny |' in text and (work / 'results.json').is_file()
    assert json.loads((work / 'results.json').read_text())['results'][0]['regime'] == 'tiny'
    with pytest.raises(FileNotFoundError):
        family.summarize('missing', str(work), [0])
