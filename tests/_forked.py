"""Run the command lines that :mod:`mmdet_pu.workflow` schedules in a fork of the test's
own process instead of a new interpreter.

Every training, test or estimate a scheduler starts is ``python -m <module> ARGS`` with
:func:`~mmdet_pu.workflow.runs.command_env` (:func:`~mmdet_pu.workflow.runs.start_command`).
A new interpreter pays the imports of torch, mmengine and mmdet, about 8-12 s on one core,
before it reads its config; a 2-iteration test training takes about 20 s, more than half
of it imports. A fork of a test worker that has imported them already starts at once.
The child runs the module as the interpreter would (``sys.argv``, the command's
environment and OpenMP threads, stdout and stderr appended to the run's log) and ends
with the module's exit status; the scheduler sees a :class:`ForkedCommand` where it would
see a :class:`subprocess.Popen`.

The tests of the scheduler itself (``tests/workflow/test_runs.py``,
``tests/studies/test_repeat.py``) and every test that calls a tool directly keep real
subprocesses.
"""
import multiprocessing
import os
import runpy
import shlex
import subprocess
import sys

import torch

from mmdet_pu.workflow import estimate, runs


def _run_module(command, log, threads):
    """The child: ``command`` (``[python, '-m', module, *args]``) as ``python`` would run
    it."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = open(1, 'w', buffering=1, closefd=False)
    sys.stderr = open(2, 'w', buffering=1, closefd=False)
    env = runs.command_env(threads)
    os.environ.clear()
    os.environ.update(env)
    torch.set_num_threads(threads)
    assert command[1] == '-m', command
    sys.argv = [command[2], *command[3:]]
    runpy.run_module(command[2], run_name='__main__', alter_sys=True)


class ForkedCommand:
    """What the schedulers use of :class:`subprocess.Popen`, for a forked command."""

    def __init__(self, command, log, threads):
        self.args = list(command)
        with open(log, 'a') as f:
            f.write(f'\n$ {shlex.join(self.args)}\n')
        self._process = multiprocessing.get_context('fork').Process(
            target=_run_module, args=(self.args, log, threads))
        self._process.start()
        self.pid = self._process.pid

    @property
    def returncode(self):
        return self._process.exitcode

    def poll(self):
        return self._process.exitcode

    def wait(self, timeout=None):
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self._process.exitcode

    def terminate(self):
        self._process.terminate()

    def kill(self):
        self._process.kill()


def fork_the_commands(monkeypatch):
    """Make the schedulers start their commands as forks of this process (until
    ``monkeypatch`` undoes it): the ``forked_commands`` fixture of tests/conftest.py.

    Only with one OpenMP thread (the workers of ``make test``): after a parallel region
    of several threads in this process (a plain ``pytest`` keeps every core), a forked
    child's first parallel region waits forever on libgomp's threads, which the fork did
    not copy. The commands then start as new interpreters, as outside the tests.
    """
    if torch.get_num_threads() > 1:
        return
    for module in (runs, estimate):
        monkeypatch.setattr(module, 'start_command', ForkedCommand)
