"""One CPU core per pytest-xdist worker.

``make test`` runs the suite in one worker per core (``pytest -n auto``). Each worker is
pinned to a core of its own, with one OpenMP thread, before any test imports torch: the
workers then never compete for a core, and the runs that tests start through
:mod:`mmdet_pu.experiments.runs` size their threads from the one core they inherit. A
plain ``pytest`` (no worker) keeps every core.
"""
import os
import sys


def pytest_configure(config):
    worker = os.environ.get('PYTEST_XDIST_WORKER')  # 'gw0', 'gw1', ... under xdist
    if worker is None or not hasattr(os, 'sched_setaffinity'):
        return
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[int(worker[2:]) % len(cores)]})
    os.environ['OMP_NUM_THREADS'] = '1'
    if 'torch' in sys.modules:
        sys.modules['torch'].set_num_threads(1)
