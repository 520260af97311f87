"""Run the ``tools/`` commands that :mod:`mmdet_pu.experiments` schedules in a fork of
the test's own process instead of a new interpreter.

Every training or test a scheduler starts is ``python tools/<script> ARGS`` with
:func:`~mmdet_pu.experiments.runs.tool_env` (:func:`~mmdet_pu.experiments.runs.start_tool`).
A new interpreter pays the imports of torch, mmengine and mmdet, about 8-12 s on one core,
before it reads its config; a 2-iteration test training takes about 20 s, more than half
of it imports. A fork of a test worker that has imported them already starts at once.
The child runs the script as the interpreter would (``sys.argv``, the script's folder on
``sys.path``, the tool's environment and OpenMP threads, stdout and stderr appended to
the run's log) and ends with the script's exit status; the scheduler sees a
:class:`ForkedTool` where it would see a :class:`subprocess.Popen`.

The tests of the scheduler itself (``tests/experiments/test_runs.py``, ``test_repeat.py``)
and every test that calls a tool directly keep real subprocesses.
"""
import multiprocessing
import os
import runpy
import shlex
import subprocess
import sys

import torch

from mmdet_pu.experiments import prior_versus, runs


def _run_script(command, log, threads, tools_dir):
    """The child: ``command`` (``[python, script, *args]``) as ``python`` would run it."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = open(1, 'w', buffering=1, closefd=False)
    sys.stderr = open(2, 'w', buffering=1, closefd=False)
    env = runs.tool_env(threads, tools_dir)
    os.environ.clear()
    os.environ.update(env)
    torch.set_num_threads(threads)
    sys.argv = list(command[1:])
    sys.path.insert(0, os.path.dirname(command[1]))
    runpy.run_path(command[1], run_name='__main__')


class ForkedTool:
    """What the schedulers use of :class:`subprocess.Popen`, for a forked tool."""

    def __init__(self, command, log, threads, tools_dir):
        self.args = list(command)
        with open(log, 'a') as f:
            f.write(f'\n$ {shlex.join(self.args)}\n')
        self._process = multiprocessing.get_context('fork').Process(
            target=_run_script, args=(self.args, log, threads, tools_dir))
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


def start_forked_tool(command, log, threads, tools_dir=runs.TOOLS_DIR):
    """:func:`mmdet_pu.experiments.runs.start_tool`, forked."""
    return ForkedTool(command, log, threads, tools_dir)


def fork_the_tools(monkeypatch):
    """Make the schedulers start their tools as forks of this process (until
    ``monkeypatch`` undoes it): the ``forked_tools`` fixture of tests/conftest.py.

    Only with one OpenMP thread (the workers of ``make test``): after a parallel region
    of several threads in this process (a plain ``pytest`` keeps every core), a forked
    child's first parallel region waits forever on libgomp's threads, which the fork did
    not copy. The tools then start as new interpreters, as outside the tests.
    """
    if torch.get_num_threads() > 1:
        return
    for module in (runs, prior_versus):
        monkeypatch.setattr(module, 'start_tool', start_forked_tool)
