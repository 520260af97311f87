"""Run a repository script in the test's own process, as ``python SCRIPT ARGS...`` from
the repository root would, and return what a subprocess would: exit status, stdout and
stderr.

A new Python process pays the imports of torch, mmengine and mmdet, about 10 s on one
core, before a script reads its first argument; the command-line tests of bad input
and the tools that only schedule other processes (``tools/repeat.py``) pay it once per
test worker this way. Tests of a training or an inference keep their own subprocess.
"""
import contextlib
import io
import os
import runpy
import subprocess
import sys
import traceback

from tests._data import REPO


def exit_status(code) -> int:
    """The status ``sys.exit(code)`` gives a process (a message is status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_script(script, *args) -> subprocess.CompletedProcess:
    """``python <REPO>/<script> ARGS...`` in this process, from the repository root: an
    uncaught exception prints its traceback to stderr and exits with status 1, as the
    interpreter does. ``sys.argv``, ``sys.path`` and the working directory are restored
    afterwards."""
    argv = [str(REPO / script), *map(str, args)]
    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_path, saved_cwd = sys.argv, list(sys.path), os.getcwd()
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(argv[0]))  # the script's folder, as python does
    os.chdir(REPO)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                runpy.run_path(argv[0], run_name='__main__')
                status = 0
            except SystemExit as stop:
                status = exit_status(stop.code)
            except Exception:  # noqa: BLE001 - reported as the interpreter would
                traceback.print_exc()
                status = 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        os.chdir(saved_cwd)
    return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())
