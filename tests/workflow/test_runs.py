"""The run scheduler of mmdet_pu.workflow.runs, with stand-in train/test command modules
(no training) and the fold override on the shipped configs."""
import argparse
import json
import shlex
import sys
import textwrap
import time

import pytest
from mmengine.config import Config

from cellio.records import write_record
from mmdet_pu.workflow.runs import (Commands, Run, available_cores, check_run_arguments,
                                    fold_options, module_command, run_all, run_dir,
                                    start_command, composed_test_settings)
from tests._data import REPO

# Stand-ins for mmdet_pu.commands.train and .test: they log their call, write what the
# real command lines leave in the work dir and fail when the config says so ('fail':
# training fails; 'untested': train --test stops before the test).
WRITE_TEST_DUMP = '''
seed = [o for o in sys.argv if o.startswith('randomness.seed=')][0].split('=')[1]
os.makedirs(os.path.join(work_dir, 'cell_metrics'), exist_ok=True)
with open(os.path.join(work_dir, 'cell_metrics', 'test_per_image.json'), 'w') as f:
    json.dump(dict(metrics={'cell/avg_f1': int(seed) / 10}), f)
'''
FAKE_TRAIN = '''
import json, os, sys
config, work_dir = sys.argv[1], sys.argv[sys.argv.index('--work-dir') + 1]
with open(os.path.join(os.path.dirname(__file__), 'calls.txt'), 'a') as f:
    f.write(json.dumps(['train', work_dir, '--resume' in sys.argv,
                        os.environ['OMP_NUM_THREADS'], '--test' in sys.argv,
                        '--show-dir' in sys.argv]) + '\\n')
if 'fail' in open(config).read():
    sys.exit('training diverged')
os.makedirs(work_dir, exist_ok=True)
with open(os.path.join(work_dir, 'iter_2.pth'), 'w') as f:
    f.write('weights')
with open(os.path.join(work_dir, 'last_checkpoint'), 'w') as f:
    f.write(os.path.join(work_dir, 'iter_2.pth'))
if '--test' in sys.argv and 'untested' not in open(config).read():
''' + textwrap.indent(WRITE_TEST_DUMP, '    ')
FAKE_TEST = '''
import json, os, sys
config, checkpoint = sys.argv[1], sys.argv[2]
work_dir = sys.argv[sys.argv.index('--work-dir') + 1]
with open(os.path.join(os.path.dirname(__file__), 'calls.txt'), 'a') as f:
    f.write(json.dumps(['test', work_dir, checkpoint, '--show-dir' in sys.argv]) + '\\n')
''' + WRITE_TEST_DUMP


#: The package of the stand-ins, importable by the runs' subprocesses (``PYTHONPATH``).
FAKE_PACKAGE = 'fake_commands'
FAKE_COMMANDS = Commands(f'{FAKE_PACKAGE}.train', f'{FAKE_PACKAGE}.test')


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """The folder of the stand-in package; ``calls.txt`` in it logs their calls."""
    folder = tmp_path / FAKE_PACKAGE
    folder.mkdir()
    (folder / '__init__.py').write_text('')
    (folder / 'train.py').write_text(FAKE_TRAIN)
    (folder / 'test.py').write_text(FAKE_TEST)
    monkeypatch.setenv('PYTHONPATH', str(tmp_path))
    return folder


def calls(tools):
    path = tools / 'calls.txt'
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def make_runs(tmp_path, tools, config_text="note = 'ok'", seeds=(0, 1), show_seed=None):
    config = tmp_path / 'method.py'
    config.write_text(config_text)
    return [Run(config, run_dir(str(tmp_path / 'work'), config, seed),
                [f'randomness.seed={seed}'], name=f'seed {seed}', commands=FAKE_COMMANDS,
                show_dir='overlays' if seed == show_seed else None)
            for seed in seeds]


def test_runs_train_then_test_and_resume_from_what_is_there(tmp_path, tools):
    runs = make_runs(tmp_path, tools, show_seed=0)
    assert [r.state() for r in runs] == ['new', 'new']
    assert runs[1].work_dir.endswith('work/method/seed1')
    messages = []
    run_all(runs, jobs=2, echo=messages.append, poll_every=0.05)
    assert [r.state() for r in runs] == ['tested', 'tested']
    assert [r.metrics['cell/avg_f1'] for r in runs] == [0.0, 0.1]
    # each trained and tested in one process (not resumed), the overlays for seed 0
    threads = str(max(1, available_cores() // 2))
    assert sorted(calls(tools)) == sorted([['train', r.work_dir, False, threads, True,
                                            seed == 0] for seed, r in enumerate(runs)])
    record = runs[0].record()
    assert record['trained'] and record['options'] == ['randomness.seed=0']
    assert record['train_seconds'] >= 0

    # nothing left to do: a second call runs nothing
    (tools / 'calls.txt').unlink()
    run_all(make_runs(tmp_path, tools), jobs=2, echo=messages.append, poll_every=0.05)
    assert calls(tools) == []
    assert '2 of 2 runs already tested' in messages[-1]

    # a trained run without its test dump is only tested; an interrupted training
    # (checkpoint, no record of a finished training) resumes, and tests in its process
    (tmp_path / 'work/method/seed0/cell_metrics/test_per_image.json').unlink()
    (tmp_path / 'work/method/seed1/cell_metrics/test_per_image.json').unlink()
    (tmp_path / 'work/method/seed1/run.json').unlink()
    again = make_runs(tmp_path, tools)
    assert [r.state() for r in again] == ['trained', 'partial']
    run_all(again, jobs=1, echo=messages.append, poll_every=0.05)
    assert [c[:3] for c in calls(tools)] == [
        ['test', again[0].work_dir, again[0].work_dir + '/iter_2.pth'],
        ['train', again[1].work_dir, True]]
    assert [r.state() for r in again] == ['tested', 'tested']


def test_a_truncated_test_dump_is_not_a_result(tmp_path, tools):
    run = make_runs(tmp_path, tools, seeds=(0,))[0]
    dump = tmp_path / 'work/method/seed0/cell_metrics/test_per_image.json'
    dump.parent.mkdir(parents=True)
    dump.write_text('{"metrics": {"cell/avg_f1"')
    assert run.state() == 'new'


def test_failures_are_reported_after_the_other_runs(tmp_path, tools):
    good = make_runs(tmp_path, tools, seeds=(1,))
    (tmp_path / 'bad').mkdir()
    bad = make_runs(tmp_path / 'bad', tools, config_text="note = 'fail'", seeds=(0,))
    with pytest.raises(RuntimeError, match=r'1 of 2 runs failed:\n\* seed 0: train exited '
                                           r'with status 1; log .*run.log:\n(.|\n)*'
                                           'training diverged'):
        run_all(bad + good, jobs=1, echo=lambda msg: None, poll_every=0.05)
    assert good[0].state() == 'tested' and bad[0].state() == 'new'


def test_a_work_dir_of_other_options_is_refused(tmp_path, tools):
    run_all(make_runs(tmp_path, tools, seeds=(0,)), echo=lambda msg: None, poll_every=0.05)
    config = tmp_path / 'method.py'
    other = Run(config, run_dir(str(tmp_path / 'work'), config, 0),
                ['randomness.seed=0', 'train_cfg.max_iters=5'], commands=FAKE_COMMANDS)
    with pytest.raises(ValueError, match=r'seed0 holds a run of .*method.py with '
                                         r"--cfg-options \['randomness.seed=0'\], not"):
        run_all([other], echo=lambda msg: None)


def floor_config(score_thr, max_iters=2):
    return (f'model = dict(test_cfg=dict(rcnn=dict(score_thr={score_thr})))\n'
            f'train_cfg = dict(max_iters={max_iters})\n'
            "test_evaluator = dict(type='CellDetMetric')\n")


def test_a_run_tested_under_other_test_settings_is_tested_again(tmp_path, tools):
    runs = make_runs(tmp_path, tools, config_text=floor_config(0.05))
    run_all(runs, echo=lambda msg: None, poll_every=0.05)
    assert runs[0].record()['test_settings'] == {
        'model.test_cfg': {'rcnn': {'score_thr': 0.05}}, 'test_dataloader.dataset': None,
        'test_evaluator': {'type': 'CellDetMetric'}, 'test_cfg': None}
    (tools / 'calls.txt').unlink()
    # the training part changed: the results stand (only the test settings are compared)
    longer = make_runs(tmp_path, tools, config_text=floor_config(0.05, max_iters=3))
    assert [r.state() for r in longer] == ['tested', 'tested']
    # the score floor removed: both runs are tested again on their checkpoints
    messages = []
    no_floor = make_runs(tmp_path, tools, config_text=floor_config(0))
    assert [r.changed_test_settings() for r in no_floor] == [['model.test_cfg']] * 2
    assert [r.state() for r in no_floor] == ['trained', 'trained']
    run_all(no_floor, echo=messages.append, poll_every=0.05)
    assert [c[:2] for c in calls(tools)] == [['test', r.work_dir] for r in no_floor]
    assert messages[0] == ('seed 0: tested under other test settings (model.test_cfg '
                           'changed since); testing it again')
    assert [r.record()['test_settings']['model.test_cfg'] for r in no_floor] == [
        {'rcnn': {'score_thr': 0}}] * 2
    assert all(r.record()['trained'] for r in no_floor)
    run_all(make_runs(tmp_path, tools, config_text=floor_config(0)),
            echo=messages.append, poll_every=0.05)
    assert len(calls(tools)) == 2  # nothing left to do
    # a run tested before the settings were recorded counts as tested
    record = no_floor[0].record()
    del record['test_settings']
    write_record(no_floor[0].record_file, record)
    assert make_runs(tmp_path, tools, config_text=floor_config(0.3))[0].state() == 'tested'


def test_test_settings_of_a_shipped_config_with_options():
    settings = composed_test_settings(
        str(REPO / 'configs/real/crchisto_classes_keep1_ce.py'),
        ['model.test_cfg.rcnn.score_thr=0.3',
         'test_dataloader.dataset.ann_file=annotations/fold1/t.json'])
    assert settings['model.test_cfg']['rcnn']['score_thr'] == 0.3
    assert settings['test_dataloader.dataset']['ann_file'] == 'annotations/fold1/t.json'
    assert settings['test_evaluator']['type'] == 'CellDetMetric'


def test_shell_commands_of_what_is_left(tmp_path, tools):
    run = make_runs(tmp_path, tools, seeds=(3,))[0]
    assert run.shell_commands() == (
        f'{sys.executable} -m {FAKE_PACKAGE}.train {tmp_path}/method.py --work-dir '
        f'{run.work_dir} --test --cfg-options randomness.seed=3')
    # trained, not tested (its test dump lost): the test on its last checkpoint
    run_all([run], echo=lambda msg: None, poll_every=0.05)
    (tmp_path / 'work/method/seed3/cell_metrics/test_per_image.json').unlink()
    assert run.state() == 'trained'
    assert run.shell_commands() == (
        f'{sys.executable} -m {FAKE_PACKAGE}.test {tmp_path}/method.py '
        f'"$(cat {run.work_dir}/last_checkpoint)" --work-dir {run.work_dir} '
        '--cfg-options randomness.seed=3')
    run_all([run], echo=lambda msg: None, poll_every=0.05)
    assert run.shell_commands() == ''


def test_progress_reads_the_training_log(tmp_path, tools):
    run = make_runs(tmp_path, tools, seeds=(0,))[0]
    (tmp_path / 'work/method/seed0').mkdir(parents=True)
    with open(run.log, 'w') as f:
        f.write('mmengine - INFO - Iter(train) [ 20/300]  lr: 1e-03  eta: 0:01:00  '
                'time: 0.5  loss: 1.2345  loss_cls: 0.5\n')
    run.stage = 'train'
    assert run.progress() == 'seed 0 20/300 loss 1.2345'


def load(config):
    return Config.fromfile(str(REPO / config), import_custom_modules=False)


def test_fold_options_point_every_loader_at_the_fold():
    cfg = load('configs/pu/mitos14_vgg16_keep1_pu.py')
    options = fold_options(cfg, 3)
    assert options == ['train_dataloader.dataset.ann_file=annotations/fold3/train.json',
                       'val_dataloader.dataset.ann_file=annotations/fold3/val.json',
                       'test_dataloader.dataset.ann_file=annotations/fold3/test_whole.json']
    cfg.merge_from_dict(dict(o.split('=', 1) for o in options))
    assert cfg.test_dataloader.dataset.ann_file == 'annotations/fold3/test_whole.json'
    assert cfg.train_dataloader.dataset.data_root == 'data/mitos14/'
    # validation switched off: only the other loaders
    no_val = load('configs/pu/mitos14_vgg16_keep1_pu.py')
    no_val.val_dataloader = None
    assert [o.split('=')[0] for o in fold_options(no_val, 1)] == [
        'train_dataloader.dataset.ann_file', 'test_dataloader.dataset.ann_file']


def test_fold_options_of_wrapped_datasets_and_evaluators():
    cfg = dict(
        train_dataloader=dict(dataset=dict(type='RepeatDataset', times=2, dataset=dict(
            ann_file='data/x/annotations/fold0/train.json'))),
        test_dataloader=dict(dataset=dict(type='ConcatDataset', datasets=[
            dict(ann_file='annotations/fold0/test.json'),
            dict(ann_file='extra/test.json')])),
        test_evaluator=[dict(type='CocoMetric', ann_file='d/annotations/fold0/test.json'),
                        dict(type='CellDetMetric')])
    assert fold_options(cfg, 2) == [
        'train_dataloader.dataset.dataset.ann_file=data/x/annotations/fold2/train.json',
        'test_dataloader.dataset.datasets.0.ann_file=annotations/fold2/test.json',
        'test_evaluator.0.ann_file=d/annotations/fold2/test.json']


def test_fold_options_need_a_fold_folder():
    cfg = dict(train_dataloader=dict(dataset=dict(ann_file='annotations/train.json')))
    with pytest.raises(ValueError, match=r'my.py: --folds needs the training ann_file in '
                                         r"an annotations/fold<k>/ folder .*found "
                                         r"\{'train_dataloader.dataset.ann_file': "
                                         r"'annotations/train.json'\}"):
        fold_options(cfg, 1, 'my.py')


def test_run_all_waits_for_slots(tmp_path, tools):
    """With one job the second run starts only after the first is tested."""
    (tools / 'train.py').write_text('import time\ntime.sleep(0.3)\n' + FAKE_TRAIN)
    runs = make_runs(tmp_path, tools)
    start = time.time()
    run_all(runs, jobs=1, echo=lambda msg: None, poll_every=0.05)
    assert time.time() - start >= 0.6
    assert [c[0] for c in calls(tools)] == ['train', 'train']


def test_a_run_trained_but_not_tested_is_tested_by_the_test_command(tmp_path, tools):
    run = make_runs(tmp_path, tools, config_text="note = 'untested'", seeds=(2,))[0]
    started = time.time()
    run_all([run], echo=lambda msg: None, poll_every=0.05)
    assert [c[0] for c in calls(tools)] == ['train', 'test']
    assert run.state() == 'tested' and run.metrics == {'cell/avg_f1': 0.2}
    assert 0 <= run.train_seconds <= time.time() - started


def test_a_run_without_test_is_finished_once_trained(tmp_path, tools):
    config = tmp_path / 'method.py'
    config.write_text("note = 'ok'")
    run = Run(config, tmp_path / 'work' / 'prior_0.1', ['x=0.1'], name='prior 0.1',
              commands=FAKE_COMMANDS, test=False)
    assert run.shell_commands() == shlex.join(run.train_command())
    messages = []
    run_all([run], echo=messages.append, poll_every=0.05)
    assert [c[0] for c in calls(tools)] == ['train']
    assert run.state() == 'trained' and run.finished()
    assert messages[0].startswith('0 of 1 runs already trained')
    assert messages[-1] == 'trained prior 0.1'
    assert run.shell_commands() == ''
    run_all([run], echo=messages.append, poll_every=0.05)
    assert len(calls(tools)) == 1  # nothing left to do
    # forgotten, it trains anew (not --resume), whatever options it had
    run.forget()
    assert run.state() == 'new' and '--resume' not in run.train_command()
    other = Run(config, run.work_dir, ['x=0.2'], commands=FAKE_COMMANDS, test=False)
    run_all([other], echo=messages.append, poll_every=0.05)
    assert calls(tools)[-1][:3] == ['train', run.work_dir, False]


def test_start_command_logs_the_command_and_its_output(tmp_path, tools):
    (tools / 'echo.py').write_text('import os, sys\nprint(sys.argv[1:], '
                                   'os.environ["OMP_NUM_THREADS"])\n')
    log = tmp_path / 'command.log'
    command = module_command(f'{FAKE_PACKAGE}.echo', 'a', 3)
    assert command == [sys.executable, '-m', f'{FAKE_PACKAGE}.echo', 'a', '3']
    assert start_command(command, str(log), 2).wait() == 0
    assert log.read_text() == f"\n$ {shlex.join(command)}\n['a', '3'] 2\n"


def test_run_arguments_are_checked(capsys):
    parser = argparse.ArgumentParser()
    for lists, jobs, options, message in (
            (dict(seeds=[0, 0]), 1, [], '--seeds repeat: [0, 0]'),
            (dict(seeds=[0], values=[0.2, 0.2]), 1, [], '--values repeat'),
            (dict(seeds=[0]), 0, [], '--jobs must be >= 1, got 0'),
            (dict(seeds=[0]), 1, ['randomness.seed=1'], 'the seed is set by --seeds')):
        with pytest.raises(SystemExit):
            check_run_arguments(parser, jobs, options, **lists)
        assert message in capsys.readouterr().err
    check_run_arguments(parser, 2, ['train_cfg.max_iters=2'], seeds=[0, 1], folds=[])
