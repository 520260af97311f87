"""Tests of the command-line tools in ``tools/`` (plain scripts, loaded by path)."""
import importlib.util

from tests._data import REPO


def load_tool(name):
    """Import ``tools/<name>.py`` as a module so its functions can be tested."""
    spec = importlib.util.spec_from_file_location(
        f'tools_{name}', REPO / 'tools' / f'{name}.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
