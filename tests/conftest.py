"""One CPU core per pytest-xdist worker, the long files first.

``make test`` runs the suite in one worker per core (``pytest -n auto``), each test file
whole on one worker (``--dist loadfile``), the files that train end to end first. Each
worker is pinned to a core of its own, with one OpenMP thread, before any test imports
torch: the workers never compete for a core, and the runs that tests start through
:mod:`mmdet_pu.workflow.runs` size their threads from the one core they inherit. A
plain ``pytest`` (no worker) keeps every core and the same order. The ``forked_commands``
fixture runs the command lines that the schedulers start in forks of the worker
(tests/_forked.py).
"""
import os
import shutil

import pytest


def pytest_configure(config):
    worker = os.environ.get('PYTEST_XDIST_WORKER')  # 'gw0', 'gw1', ... under xdist
    if worker is None or not hasattr(os, 'sched_setaffinity'):
        return
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[int(worker[2:]) % len(cores)]})
    os.environ['OMP_NUM_THREADS'] = '1'  # read when the tests first import torch


def pytest_collection_modifyitems(config, items):
    """The files that hold a ``slow`` test (one that trains end to end through the tools)
    run first, so that the workers finish together instead of one waiting for the
    other's last long test; the order within each group is kept."""
    slow_files = {item.path for item in items if item.get_closest_marker('slow')}
    items.sort(key=lambda item: item.path not in slow_files)


@pytest.fixture
def forked_commands(monkeypatch):
    """The trainings, tests and estimates that :mod:`mmdet_pu.workflow` schedules run in
    forks of this process, which has done the imports already (tests/_forked.py)."""
    from tests._forked import fork_the_commands  # imports torch: after pytest_configure
    fork_the_commands(monkeypatch)


@pytest.fixture(scope='module')
def module_tmp_path(request, tmp_path_factory):
    """A temporary directory for one test file's shared fixtures, removed when the file
    is done: they hold checkpoints, and the suite's peak disk use is the sum of what its
    files keep (``tmp_path`` of a passing test goes at once: setup.cfg)."""
    path = tmp_path_factory.mktemp(request.module.__name__.rsplit('.', 1)[-1])
    yield path
    shutil.rmtree(path, ignore_errors=True)


def pytest_sessionstart(session):
    """Import mmdet_pu before any test imports mmdet's models: where mmcv has no compiled
    ops (``MMCV_OPS=torch make setup``) its torch stand-ins must be in place first."""
    import mmdet_pu  # noqa: F401
