"""Repeated runs (studies.repeat, tools/repeat.py): real 2-iteration runs over
two seeds, resumability, the statistics."""
import json

import numpy as np
import pytest
from scipy import stats

from mmdet_pu.evaluation.statistics import benjamini_hochberg
from mmdet_pu.workflow.runs import Run
from studies import repeat
from tests._cli import run_script
from tests._data import REPO
from tests.studies.test_comparison import dump

CONFIG = str(REPO / 'configs/synthetic/synthetic_keep1_pu.py')


def cli(*argv):
    return run_script('tools/repeat.py', *argv)


@pytest.fixture(scope='module')
def experiment(module_tmp_path):
    """Two seeds of the synthetic PU config, 2 iterations each, on 4 generated images."""
    tmp = module_tmp_path
    data = tmp / 'data'
    assert run_script('data_prep/prepare.py', 'synthetic', '--out', data, '--num-images', '4',
                      '--no-progress').returncode == 0
    argv = [CONFIG, '--seeds', '0', '1', '--names', 'PU', '--work-dir', str(tmp / 'work'),
            '--jobs', '2', '--cfg-options', 'train_cfg.max_iters=2',
            'default_hooks.checkpoint.interval=2', 'val_cfg=None', 'val_dataloader=None',
            'val_evaluator=None', f'train_dataloader.dataset.data_root={data}/',
            f'test_dataloader.dataset.data_root={data}/']
    proc = cli(*argv)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return tmp / 'work', argv, proc.stdout


def per_run_metrics(work):
    return [json.loads((work / 'synthetic_keep1_pu' / f'seed{k}' / 'cell_metrics' /
                        'test_per_image.json').read_text())['metrics'] for k in (0, 1)]


@pytest.mark.slow
def test_table_holds_the_statistics_of_the_runs(experiment):
    work, _, stdout = experiment
    runs = per_run_metrics(work)
    results = json.loads((work / 'results.json').read_text())
    assert results['seeds'] == [0, 1] and results['folds'] is None
    assert results['runs']['PU'] == [str(work / 'synthetic_keep1_pu' / f'seed{k}')
                                     for k in (0, 1)]
    md = (work / 'results.md').read_text()
    assert md == stdout[stdout.index('2 runs per method'):stdout.index('[repeat] wrote')
                        ].strip() + '\n'
    row = next(line for line in md.splitlines() if line.startswith('| PU |'))
    for rate in ('recall', 'precision', 'f1'):
        values = [m[f'cell/mitosis/avg_{rate}'] for m in runs]
        entry = results['table']['PU']['mitosis'][rate]
        assert entry['values'] == values
        defined = [v for v in values if v is not None]
        assert entry['mean'] == pytest.approx(np.mean(defined))
        if len(defined) == 2:
            assert entry['std'] == pytest.approx(np.std(defined, ddof=1))
            assert f'{np.std(defined, ddof=1):.3f}' in row
        assert f'{np.mean(defined):.3f}' in row
        assert entry['p'] is None  # the reference is not tested
    assert (work / 'results.png').stat().st_size > 10_000
    # the ranking table: F1 at 0.5 is the metric's F1; without validation (switched off
    # here) the F1 at the validation threshold is undefined, and the note says so
    ranking = results['ranking']
    assert ranking['table']['PU']['mitosis']['f1'] == results['table']['PU']['mitosis']['f1']
    assert ranking['table']['PU']['mitosis']['ap']['values'] == [
        m['cell/mitosis/ap'] for m in runs]
    assert ranking['val_score_thrs'] == {'PU': [None, None]}
    assert '| Method | F1 at 0.5 mean | std | p | F1 at val. thr. mean |' in md
    assert '2 of 2 runs have no validation threshold' in md
    # both seeds trained for their own seed
    for k in (0, 1):
        record = json.loads((work / 'synthetic_keep1_pu' / f'seed{k}' / 'run.json')
                            .read_text())
        assert record['trained'] and record['options'][-1] == f'randomness.seed={k}'


def test_second_call_runs_nothing_and_dry_run_prints_nothing(experiment):
    # (a trained run without its test dump is only tested: tests/workflow/test_runs.py)
    work, argv, _ = experiment
    logs = {p: p.stat().st_mtime_ns for p in work.glob('*/seed*/run.log')}
    results = (work / 'results.json').read_text()
    out = cli(*argv).stdout
    assert '[repeat] 2 of 2 runs already tested, 0 only need the test; running 0' in out
    assert {p: p.stat().st_mtime_ns for p in work.glob('*/seed*/run.log')} == logs
    assert (work / 'results.json').read_text() == results
    assert cli(*argv, '--dry-run').stdout == ''


def test_dry_run_prints_a_command_per_seed_and_fold(tmp_path):
    work = tmp_path / 'work'
    configs = [str(REPO / 'configs/pu/mitos14_vgg16_keep1_pu.py'),
               str(REPO / 'configs/baselines/mitos14_vgg16_keep1_ce.py')]
    plan = repeat.plan_runs(['pu', 'ce'], configs, [0, 1], str(work), folds=[0, 4])
    lines = repeat.dry_run(plan)
    assert len(lines) == 8
    # seed-major: every method of seed 0 (both folds) before seed 1
    assert ['seed0_fold0' in line for line in lines[:2]] == [True, True]
    assert not work.exists()  # nothing ran, nothing written
    line = next(line for line in lines if f'{work}/mitos14_vgg16_keep1_ce/seed1_fold4 '
                in line)
    assert f'-m mmdet_pu.commands.train {REPO}/configs/baselines/mitos14_vgg16_keep1_ce.py' in line
    assert ' --test --cfg-options ' in line  # trained and tested by one process
    for split in ('train.json', 'val.json', 'test_whole.json'):
        assert f'annotations/fold4/{split}' in line
    assert 'fold0' not in line and line.endswith('randomness.seed=1')


def test_p_values_pair_the_runs_of_two_methods(tmp_path):
    # (tp, fp, fn) of the single test image per seed; runs pair by seed
    counts = dict(ref=[(6, 2, 4), (8, 1, 2), (7, 3, 3)],
                  other=[(5, 5, 5), (6, 4, 4), (6, 2, 4)])
    plan = {}
    for name, per_seed in counts.items():
        plan[name] = []
        for seed, c in enumerate(per_seed):
            run_dir = tmp_path / name / f'seed{seed}'
            dump(run_dir, {0: [c]})
            plan[name].append(Run('x.py', str(run_dir)))
    compared = repeat.compare_runs(plan, 'ref')
    table, num_tests = compared.rates, compared.rate_tests
    assert num_tests == 3 and compared.ranking_tests == 3
    rates = dict(recall=lambda tp, fp, fn: tp / (tp + fn),
                 precision=lambda tp, fp, fn: tp / (tp + fp),
                 f1=lambda tp, fp, fn: 2 * tp / (2 * tp + fp + fn))
    raw = [stats.ttest_rel([f(*c) for c in counts['other']],
                           [f(*c) for c in counts['ref']]).pvalue for f in rates.values()]
    for rate, q in zip(rates, benjamini_hochberg(raw)):
        assert table[('other', 'cell', rate)].p == pytest.approx(q)
        assert table[('other', 'cell', rate)].mean == pytest.approx(
            np.mean([rates[rate](*c) for c in counts['other']]))


def test_input_errors_are_clear(tmp_path):
    proc = cli(CONFIG, '--seeds', '0', '--names', 'a', 'b')
    assert proc.returncode == 2 and '1 CONFIG arguments but 2 --names' in proc.stderr
    config = tmp_path / 'unfolded.py'
    config.write_text("train_dataloader = dict(dataset=dict(ann_file='annotations/a.json'))")
    proc = cli(str(config), '--seeds', '0', '--folds', '1', '--dry-run')
    assert proc.returncode == 2 and proc.stderr.startswith(
        f'repeat.py: error: {config}: --folds needs the training ann_file in an '
        'annotations/fold<k>/ folder')
    with pytest.raises(ValueError, match=r'set by --folds'):
        repeat.plan_runs(['pu'], [str(REPO / 'configs/pu/mitos14_vgg16_keep1_pu.py')], [0],
                         str(tmp_path), folds=[1], cfg_options=[
                             'train_dataloader.dataset.ann_file=annotations/fold0/x.json'])
