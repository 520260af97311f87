"""Training + test runs as subprocesses, scheduled side by side.

A :class:`Run` trains one config with the library's training command line
(``python -m mmdet_pu.commands.train --test``, :class:`Commands`) into its own work dir,
which then evaluates the last checkpoint in the same process as the test command line
(:mod:`mmdet_pu.commands.test`) would (the config's test loop and ``CellDetMetric``, one
Python start saved), so its test dump is ``<work dir>/cell_metrics/test_per_image.json``;
a run trained but not tested (its test failed or was stopped) is tested with the test
command line. A run made with
``test=False`` only trains (a prior sweep reads the validation dump that training
leaves). :func:`run_all` runs a list of them, ``jobs`` at a time with ``cores // jobs``
threads each (``OMP_NUM_THREADS``). Every subprocess appends its output to
``<work dir>/run.log``. Everything that trains schedules through here;
:func:`start_command` starts any other command (:func:`module_command`) the same way.

Runs are resumable: what a run still needs is read from its work dir.

========  ==============================================================  ============
state     found in the work dir                                           what runs
========  ==============================================================  ============
tested    a valid ``cell_metrics/test_per_image.json``, tested under the  nothing
          config's current test settings
trained   ``run.json`` with ``"trained": true`` (written when training    the test
          exits successfully)                                             (none if
                                                                          test=False)
partial   ``last_checkpoint`` (training was interrupted)                  training with
                                                                          ``--resume``,
                                                                          then the test
new       none of these                                                   both
========  ==============================================================  ============

``run.json`` also records the config and ``--cfg-options`` the run was started with; a
work dir holding a run of another config or other options is an error, never silently
reused. Once tested it records the test settings too (:data:`TEST_SETTINGS` of the
composed config): a run whose config's test settings changed since (a score floor, a
detection cap, the test data) is tested again on its checkpoint, so results of two
settings are never pooled; a run tested before the settings were recorded counts as
tested. The training part of the config file is not compared. ``run.json`` is a record
of :mod:`cellio.records`, the package's one store of finished work.
"""
import json
import os
import os.path as osp
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, List, NamedTuple, Optional, Sequence

from mmengine.config import Config

from cellio.records import discard, read_record, write_record
from mmdet_pu.engine.launch import last_checkpoint, parse_cfg_options
from mmdet_pu.evaluation.cell_metric import report_path
from mmdet_pu.evaluation.metric_dump import read_metric_dump

ITER_RE = re.compile(r'Iter\(train\)\s*\[\s*(\d+)/(\d+)\].*?\bloss: ([\d.]+)')
FOLD_RE = re.compile(r'(?<![^/])annotations/fold\d+/')
LOADERS = ('train_dataloader', 'val_dataloader', 'test_dataloader')
EVALUATORS = ('val_evaluator', 'test_evaluator')
#: The parts of a composed config a test result depends on besides the checkpoint.
TEST_SETTINGS = ('model.test_cfg', 'test_dataloader.dataset', 'test_evaluator', 'test_cfg')


def available_cores() -> int:
    """CPU cores this process may use."""
    if hasattr(os, 'sched_getaffinity'):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class Commands(NamedTuple):
    """The modules a :class:`Run` starts with ``python -m``: its training (which takes
    the options of :mod:`mmdet_pu.commands.train`) and its test (those of
    :mod:`mmdet_pu.commands.test`)."""
    train: str = 'mmdet_pu.commands.train'
    test: str = 'mmdet_pu.commands.test'


def command_env(threads: int) -> dict:
    """The environment of a scheduled subprocess: this one's, with ``threads`` OpenMP
    threads."""
    return dict(os.environ, OMP_NUM_THREADS=str(threads))


def check_run_arguments(parser, jobs: int, cfg_options: Sequence[str], **lists) -> None:
    """Argument checks of the tools that schedule runs over seeds (``parser.error`` on
    failure): no value repeated in the ``lists`` (``seeds=[0, 1]``, named as the flag),
    ``jobs >= 1``, and no ``randomness.seed`` in ``cfg_options`` (each run sets its own)."""
    for name, values in lists.items():
        if len(set(values)) != len(values):
            parser.error(f'--{name} repeat: {values}')
    if jobs < 1:
        parser.error(f'--jobs must be >= 1, got {jobs}')
    for option in cfg_options:
        if option.split('=')[0].startswith('randomness.seed'):
            parser.error(f'--cfg-options {option}: the seed is set by --seeds')


def module_command(module: str, *args) -> List[str]:
    """``python -m <module> ARGS...`` with this interpreter."""
    return [sys.executable, '-m', module, *map(str, args)]


def start_command(command: Sequence[str], log: str, threads: int) -> subprocess.Popen:
    """Start ``command`` (:func:`module_command`) with :func:`command_env`; the command
    line and then its output are appended to ``log``."""
    with open(log, 'a') as f:
        f.write(f'\n$ {shlex.join(command)}\n')
        f.flush()
        return subprocess.Popen(list(command), env=command_env(threads), stdout=f,
                                stderr=subprocess.STDOUT)


def log_tail(log: str, lines: int = 30) -> str:
    """The last ``lines`` lines of a log file."""
    with open(log, errors='replace') as f:
        return ''.join(f.readlines()[-lines:])


def default_work_dir(config: str, suffix: str = '') -> str:
    """``work_dirs/<config stem><suffix>``: a tool's folder when it is given none."""
    return osp.join('work_dirs', Path(config).stem + suffix)


def run_dir(work_dir: str, config: str, seed: int, fold: Optional[int] = None) -> str:
    """``<work_dir>/<config stem>/seed<seed>[_fold<fold>]``."""
    name = f'seed{seed}' if fold is None else f'seed{seed}_fold{fold}'
    return osp.join(work_dir, Path(config).stem, name)


def composed_config(config: str, options: Sequence[str] = ()) -> Config:
    """``config`` read without importing its custom modules, with the ``--cfg-options``
    ``options`` merged: the config the runs' commands will compose."""
    cfg = Config.fromfile(config, import_custom_modules=False)
    if options:
        cfg.merge_from_dict(parse_cfg_options(options))
    return cfg


def composed_test_settings(config: str, options: Sequence[str] = ()) -> dict:
    """``{key: value}`` of :data:`TEST_SETTINGS` in :func:`composed_config`, as JSON
    values (None where the config has no such key)."""
    composed, settings = composed_config(config, options).to_dict(), {}
    for key in TEST_SETTINGS:
        node = composed
        for part in key.split('.'):
            node = node.get(part, None) if isinstance(node, dict) else None
        settings[key] = node
    return json.loads(json.dumps(settings, default=repr))


def _ann_files(node, key):
    """``(dotted key, path)`` of every ``ann_file`` in a dataset or evaluator config,
    wrapped datasets (``dataset``, ``datasets``) and evaluator lists included."""
    if isinstance(node, (list, tuple)):
        for i, child in enumerate(node):
            yield from _ann_files(child, f'{key}.{i}')
    elif isinstance(node, dict):
        if isinstance(node.get('ann_file', None), str):
            yield f'{key}.ann_file', node['ann_file']
        for name in ('dataset', 'datasets'):
            if node.get(name, None):
                yield from _ann_files(node[name], f'{key}.{name}')


def fold_options(cfg, fold: int, source: str = 'config') -> List[str]:
    """``--cfg-options`` that point every ``annotations/fold<k>/`` path at ``fold``.

    The ``ann_file`` of each loader's dataset (wrapped datasets included) and of the
    evaluators are rewritten where they contain the ``annotations/fold<k>/`` folder of
    ``data_prep/prepare.py``; loaders and evaluators set to ``None`` are skipped.

    Args:
        cfg: the composed config (``mmengine.Config`` or dict), after any
            ``--cfg-options`` the runs will get.
        fold: the fold index.
        source: the config's name for error messages.

    Raises:
        ValueError: the training loader's ``ann_file`` has no ``annotations/fold<k>/``.
    """
    found = []
    for loader in LOADERS:
        if cfg.get(loader, None):
            found += _ann_files(cfg[loader].get('dataset', None), f'{loader}.dataset')
    for evaluator in EVALUATORS:
        found += _ann_files(cfg.get(evaluator, None), evaluator)
    options = [f'{key}={FOLD_RE.sub(f"annotations/fold{fold}/", path)}'
               for key, path in found if FOLD_RE.search(path)]
    if not any(o.startswith('train_dataloader.') for o in options):
        train = {k: v for k, v in found if k.startswith('train_dataloader.')}
        raise ValueError(f'{source}: --folds needs the training ann_file in an '
                         'annotations/fold<k>/ folder (the layout of data_prep/prepare.py);'
                         f' found {train or "no train_dataloader.dataset.ann_file"}')
    return options


class Run:
    """One config trained and tested in its own work dir.

    Args:
        config: config file.
        work_dir: the run's work dir (training and test).
        options: ``--cfg-options`` (``key=value`` strings) of training and test.
        name: a label for messages; defaults to the work dir.
        show_dir: passed to the test's ``--show-dir`` (TP/FP/FN overlays under
            ``<work dir>/<timestamp>/<show_dir>``); None paints nothing.
        commands: the modules that train and test.
        test: test after training; False: the run is finished once trained.
    """

    def __init__(self, config: str, work_dir: str, options: Sequence[str] = (),
                 name: Optional[str] = None, show_dir: Optional[str] = None,
                 commands: Commands = Commands(), test: bool = True):
        self.config, self.work_dir = str(config), str(work_dir)
        self.options = [str(o) for o in options]
        self.name = name or self.work_dir
        self.show_dir = show_dir
        self.commands = commands
        self.test = test
        self.log = osp.join(self.work_dir, 'run.log')
        self.record_file = osp.join(self.work_dir, 'run.json')
        self.report = report_path(self.work_dir, 'test')
        self.stage = self.proc = self.error = None
        self.threads, self._started = 1, None
        self._test_settings = None

    # -- what is there -------------------------------------------------------------
    def record(self) -> Optional[dict]:
        """The content of ``run.json``, or None (absent or unreadable)."""
        return read_record(self.record_file)

    def check_record(self) -> None:
        """Raise if the work dir holds a run of another config or other options."""
        record = self.record()
        if record is None:
            return
        if (osp.abspath(record['config']) != osp.abspath(self.config)
                or record['options'] != self.options):
            raise ValueError(
                f'{self.work_dir} holds a run of {record["config"]} with --cfg-options '
                f'{record["options"]}, not of {self.config} with {self.options}; use '
                'another work dir or delete that run')

    def tested(self) -> bool:
        """Whether the test dump exists and is complete JSON with metrics."""
        try:
            read_metric_dump(self.report)
        except (OSError, ValueError):
            return False
        return True

    def current_test_settings(self) -> dict:
        """The config's current :func:`composed_test_settings` with this run's options."""
        if self._test_settings is None:
            self._test_settings = composed_test_settings(self.config, self.options)
        return self._test_settings

    def _changed_since_recorded(self) -> List[str]:
        recorded = (self.record() or {}).get('test_settings')
        if recorded is None:
            return []
        current = self.current_test_settings()
        return [key for key in TEST_SETTINGS if recorded.get(key) != current[key]]

    def changed_test_settings(self) -> List[str]:
        """The :data:`TEST_SETTINGS` that differ from those the run was tested under
        ([] when it is not tested, or was tested before they were recorded)."""
        return self._changed_since_recorded() if self.test and self.tested() else []

    def state(self) -> str:
        """``'tested'``, ``'trained'``, ``'partial'`` or ``'new'`` (module docstring)."""
        if self.test and self.tested() and not self._changed_since_recorded():
            return 'tested'
        if (self.record() or {}).get('trained'):
            return 'trained'
        if osp.isfile(osp.join(self.work_dir, 'last_checkpoint')):
            return 'partial'
        return 'new'

    def finished(self) -> bool:
        """Nothing left to run: tested, or trained for a run without a test."""
        return self.state() == ('tested' if self.test else 'trained')

    def forget(self) -> None:
        """Make the run start anew: remove ``run.json`` and ``last_checkpoint`` (the
        checkpoints, logs and dumps stay until the new run overwrites them)."""
        for path in (self.record_file, osp.join(self.work_dir, 'last_checkpoint')):
            discard(path)

    @property
    def train_seconds(self) -> Optional[float]:
        """Wall time of the training that finished the run (None: unknown)."""
        return (self.record() or {}).get('train_seconds')

    @property
    def metrics(self) -> dict:
        """The summary metrics of the test dump (undefined values are None)."""
        return read_metric_dump(self.report)['metrics']

    # -- commands ------------------------------------------------------------------
    def train_command(self) -> List[str]:
        """The training (``--test``: and the test, unless ``test=False``)."""
        command = module_command(self.commands.train, self.config, '--work-dir',
                                 self.work_dir)
        if self.state() == 'partial':
            command.append('--resume')
        if self.test:
            command.append('--test')
            if self.show_dir:
                command += ['--show-dir', self.show_dir]
        return command + (['--cfg-options', *self.options] if self.options else [])

    def test_command(self, checkpoint: str) -> List[str]:
        """The test of ``checkpoint``."""
        command = module_command(self.commands.test, self.config, checkpoint, '--work-dir',
                                 self.work_dir)
        if self.show_dir:
            command += ['--show-dir', self.show_dir]
        return command + (['--cfg-options', *self.options] if self.options else [])

    def shell_commands(self) -> str:
        """The shell line that does what the run still needs (for ``--dry-run``)."""
        state = self.state()
        if self.finished():
            return ''
        if state != 'trained':
            return shlex.join(self.train_command())
        checkpoint = '"$(cat {})"'.format(
            shlex.quote(osp.join(self.work_dir, 'last_checkpoint')))
        return shlex.join(self.test_command('CHECKPOINT')).replace('CHECKPOINT', checkpoint)

    def last_checkpoint(self) -> str:
        """The checkpoint training finished with (``last_checkpoint`` in the work dir)."""
        return last_checkpoint(self.work_dir)

    # -- running -------------------------------------------------------------------
    def _spawn(self, command, threads):
        self.proc = start_command(command, self.log, threads)

    def start(self, threads: int) -> None:
        """Start what the run still needs: training (then the test) or the test."""
        os.makedirs(self.work_dir, exist_ok=True)
        self.threads, self.error = threads, None
        if self.test:
            self._test_settings = composed_test_settings(self.config, self.options)
        if self.state() == 'trained':
            self._start_test()
            return
        command = self.train_command()
        write_record(self.record_file,
                     dict(config=self.config, options=self.options, trained=False))
        self.stage, self._started = 'train', time.time()
        self._spawn(command, threads)

    def _start_test(self):
        self.stage = 'test'
        self._spawn(self.test_command(self.last_checkpoint()), self.threads)

    def poll(self) -> str:
        """Advance the run: ``'running'``, ``'done'`` (tested) or ``'failed'``
        (:attr:`error` says why)."""
        if self.proc.poll() is None:
            return 'running'
        if self.proc.returncode != 0:
            self.error = (f'{self.stage} exited with status {self.proc.returncode}; '
                          f'log {self.log}:\n{self.log_tail()}')
            return 'failed'
        if self.stage == 'train':
            checkpoint = osp.join(self.work_dir, 'last_checkpoint')
            if not osp.isfile(checkpoint):
                self.error = f'training wrote no checkpoint into {self.work_dir}'
                return 'failed'
            # training ends with its last checkpoint and validation, before the test
            ended = max(osp.getmtime(path) for path in
                        (checkpoint, report_path(self.work_dir, 'val')) if osp.isfile(path))
            record = dict(config=self.config, options=self.options, trained=True,
                          train_seconds=round(max(ended - self._started, 0.0), 1))
            tested = self.test and self.tested()
            if tested:
                record['test_settings'] = self._test_settings
            write_record(self.record_file, record)
            if not self.test or tested:
                self.stage = 'done'
                return 'done'
            self._start_test()
            return 'running'
        if not self.tested():
            self.error = (f'the test wrote no {self.report}; the test evaluator must be '
                          'CellDetMetric')
            return 'failed'
        write_record(self.record_file,
                     dict(self.record() or {}, test_settings=self._test_settings))
        self.stage = 'done'
        return 'done'

    def stop(self) -> None:
        """Terminate a running subprocess (what it finished stays resumable)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def log_tail(self, lines: int = 30) -> str:
        return log_tail(self.log, lines)

    def progress(self) -> str:
        """A short status: training iteration and loss, or the stage."""
        if self.stage != 'train':
            return f'{self.name} {self.stage}'
        with open(self.log, 'rb') as f:
            f.seek(max(0, osp.getsize(self.log) - 65536))
            matches = ITER_RE.findall(f.read().decode(errors='replace'))
        if not matches:
            return f'{self.name} starting'
        iteration, total, loss = matches[-1]
        return f'{self.name} {iteration}/{total} loss {loss}'


def run_all(runs: Sequence[Run], jobs: int = 1, echo: Callable[[str], None] = print,
            status_every: float = 60, poll_every: float = 2) -> None:
    """Train and test every run that is not finished yet, ``jobs`` at a time.

    Runs are started in the given order; a run that fails does not stop the others.

    Raises:
        ValueError: a work dir holds a run of another config or other options (checked
            before anything starts).
        RuntimeError: some runs failed (after all others finished); names each with the
            end of its log.
    """
    for run in runs:
        run.check_record()
        changed = run.changed_test_settings()
        if changed:
            echo(f'{run.name}: tested under other test settings ({", ".join(changed)} '
                 'changed since); testing it again')
    pending = [run for run in runs if not run.finished()]
    trained = sum(run.state() == 'trained' for run in pending)
    threads = max(1, available_cores() // max(1, jobs))
    done = 'tested' if any(run.test for run in runs) else 'trained'
    echo(f'{len(runs) - len(pending)} of {len(runs)} runs already {done}, {trained} '
         f'only need the test; running {len(pending)}, {jobs} at a time with {threads} '
         'thread(s) each')
    active, failed, last_status = [], [], time.time()
    try:
        while pending or active:
            while pending and len(active) < jobs:
                run = pending.pop(0)
                run.start(threads)
                echo(f'{run.stage} {run.name}: {run.config} (log {run.log})')
                active.append(run)
            time.sleep(poll_every)
            still = []
            for run in active:
                stage, result = run.stage, run.poll()
                if result == 'failed':
                    echo(f'FAILED {run.name}: {run.error}')
                    failed.append(run)
                elif result == 'done':
                    echo(f'{"tested" if run.test else "trained"} {run.name}')
                else:
                    if run.stage != stage:
                        echo(f'trained {run.name} in {run.train_seconds / 60:.1f} min; '
                             'testing')
                    still.append(run)
            active = still
            if active and time.time() - last_status > status_every:
                last_status = time.time()
                echo(' | '.join(run.progress() for run in active))
    finally:
        for run in active:
            run.stop()
    if failed:
        raise RuntimeError(f'{len(failed)} of {len(runs)} runs failed:\n' + '\n'.join(
            f'* {run.name}: {run.error}' for run in failed))
