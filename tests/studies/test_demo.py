"""The README's first command, shortened: the demo (studies.demo, a preset of
repeat) runs end to end over seeds and reports."""
import json
import os

import numpy as np
import pytest

from mmdet_pu.workflow.runs import Run
from studies import demo
from studies.comparison import OVERALL, RANKING, build_table, load_runs
from tests._cli import run_script
from tests._data import REPO
from tests.studies.test_comparison import dump


@pytest.mark.slow
@pytest.mark.usefixtures('forked_commands')
def test_short_demo_over_two_seeds_end_to_end(tmp_path):
    work_dir = tmp_path / 'demo'
    argv = ['tools/demo.py', '--variant', 'binary', '--iters', '2', '--seeds', '0', '1',
            '--num-images', '4', '--jobs', '2', '--work-dir', work_dir,
            '--data-root', tmp_path / 'data']
    proc = run_script(*argv)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert '| method | recall | precision | F1 | gap closed |' in proc.stdout
    assert 'PU > naive PU on F1 over 2 seeds: ' in proc.stdout

    results = json.loads((work_dir / 'results.json').read_text())
    assert [row['method'] for row in results['rows']] == [
        'CE baseline', 'naive PU', 'PU', 'upper bound']
    for row in results['rows']:
        runs = results['metrics'][row['method']]
        assert len(runs) == 2
        for rate in ('recall', 'f1'):  # defined even without detections
            values = [m[f'cell/avg_{rate}'] for m in runs]
            assert row[rate] == pytest.approx(np.mean(values))
            assert row[f'{rate}_std'] == pytest.approx(np.std(values, ddof=1))
        for m in runs:
            assert m['cell/mitosis/fn'] + m['cell/mitosis/tp'] > 0  # test cells seen
    claim = results['significance']
    assert (claim['ref'], claim['other'], claim['num_tests']) == ('PU', 'naive PU', 3)
    assert claim['p'] == results['table']['naive PU']['mitosis']['f1']['p']
    # each method trained once per seed, in its own work dir, with its seed
    for name, dirs in results['runs'].items():
        assert [d.rsplit('/', 1)[1] for d in dirs] == ['seed0', 'seed1']
        for k, d in enumerate(dirs):
            record = json.loads(open(os.path.join(d, 'run.json')).read())
            assert record['options'][-1] == f'randomness.seed={k}'
    assert (work_dir / 'figure.png').stat().st_size > 10_000
    assert (work_dir / 'results.md').read_text().startswith('| method |')
    # the ranking table: every method but the upper bound tested against PU, the runs'
    # validation thresholds those of their validation dumps
    ranking = results['ranking']
    assert ranking['num_tests'] == 6  # CE and naive PU x (F1 at 0.5, at val. thr., AP)
    assert ranking['table']['upper bound']['mitosis']['ap']['p'] is None
    for name, dirs in results['runs'].items():
        for d, thr in zip(dirs, ranking['val_score_thrs'][name]):
            val = json.load(open(os.path.join(d, 'cell_metrics', 'val_per_image.json')))
            assert thr == val['metrics']['cell/pu_score_thr']
    assert '| Method | F1 at 0.5 mean | std | p | F1 at val. thr. mean |' in proc.stdout

    # a second call reuses every run and prints the same table
    again = run_script(*argv)
    assert again.returncode == 0, again.stderr[-3000:]
    assert '8 of 8 runs already tested' in again.stdout
    table = proc.stdout[proc.stdout.index('| method |'):proc.stdout.index('Total time')]
    assert table in again.stdout


def test_multi_class_summary_uses_the_mean_over_classes(tmp_path):
    """Table, gap closed and significance line of the multi variant from given dumps."""
    classes = ('tumor', 'lymphocyte', 'stromal')
    # (tp, fp, fn) per class for seeds 0, 1, 2 of each method
    counts = {'CE baseline': [[(1, 0, 9)] * 3, [(2, 0, 8)] * 3, [(1, 1, 9)] * 3],
              'multi-class PU': [[(6, 2, 4)] * 3, [(7, 2, 3)] * 3, [(8, 1, 2)] * 3],
              'upper bound': [[(9, 1, 1)] * 3, [(9, 0, 1)] * 3, [(10, 1, 0)] * 3]}
    plan = {}
    for name, per_seed in counts.items():
        plan[name] = []
        for seed, c in enumerate(per_seed):
            run = Run('x.py', str(tmp_path / name / f'seed{seed}'))
            dump(tmp_path / name / f'seed{seed}', {0: c}, classes)
            (tmp_path / name / f'seed{seed}' / 'run.json').write_text(json.dumps(dict(
                config='x.py', options=[], trained=True, train_seconds=60.0)))
            plan[name].append(run)
    methods = [load_runs(name, [r.report for r in runs], overall=True)
               for name, runs in plan.items()]
    table, num_tests = build_table(methods, 'multi-class PU', untested=['upper bound'])
    assert num_tests == 12  # CE vs multi-class PU: 3 classes and their mean x 3 rates
    ranking, ranking_tests = build_table(methods, 'multi-class PU', ['upper bound'],
                                         measures=RANKING)
    assert ranking_tests == 12 and np.isnan(ranking[('CE baseline', OVERALL, 'f1_val')].p)
    rows, main_class = demo.summarise('multi', plan, methods, table)
    assert main_class == OVERALL

    def f1(tp, fp, fn):
        return 2 * tp / (2 * tp + fp + fn)

    means = {name: np.mean([f1(*c[0]) for c in per_seed]) for name, per_seed in counts.items()}
    pu = next(r for r in rows if r['method'] == 'multi-class PU')
    assert pu['f1'] == pytest.approx(means['multi-class PU'])
    assert pu['f1/tumor'] == pytest.approx(means['multi-class PU'])
    assert pu['gap_closed'] == pytest.approx(
        (means['multi-class PU'] - means['CE baseline'])
        / (means['upper bound'] - means['CE baseline']))
    assert pu['train_minutes'] == 1.0
    claim, line = demo.significance('multi', methods, table, num_tests, main_class)
    assert line.startswith('multi-class PU > CE baseline on F1 over 3 seeds: significant')
    assert claim['p'] == pytest.approx(table[('CE baseline', OVERALL, 'f1')].p)
    md = demo.markdown_table(rows, methods[0].classes)
    assert md.splitlines()[0] == ('| method | recall | precision | F1 | F1 tumor | '
                                  'F1 lymphocyte | F1 stromal | gap closed |')


def test_the_demo_is_a_preset_of_repeat(tmp_path):
    """Its runs: every method x seed of the preset on the prepared data, seed-major."""
    plan = demo.plan_demo('binary', str(tmp_path / 'w'), 'data/x', [3, 4], iters=10)
    assert list(plan) == ['CE baseline', 'naive PU', 'PU', 'upper bound']
    pu = plan['PU']
    assert pu[0].config == str(REPO / 'configs/synthetic/synthetic_keep1_pu.py')
    assert pu[1].work_dir == str(tmp_path / 'w' / 'synthetic_keep1_pu' / 'seed4')
    assert pu[0].options == [
        'train_dataloader.dataset.data_root=data/x/', 'val_dataloader.dataset.data_root='
        'data/x/', 'test_dataloader.dataset.data_root=data/x/', 'train_cfg.max_iters=10',
        'train_cfg.val_interval=10', 'default_hooks.checkpoint.interval=10',
        'randomness.seed=3']
    assert [run.show_dir for run in pu] == ['overlays', None]  # the first seed's
