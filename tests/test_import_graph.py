"""The import rules of the checkout, stated and enforced.

* ``cellio`` (files and command lines) imports no other package of the project, nor
  torch, mmengine or mmdet; ``mmdet_pu`` is the library on top of it; ``studies`` (the
  experiments behind docs/experiments.md, not installed) import the library, never the
  reverse; ``data_prep``'s converters import ``cellio`` only.
* No import cycle between the units: the subpackages (and top-level modules) of
  ``mmdet_pu``, and the packages ``cellio``, ``studies`` and ``data_prep``.
* The library runs no file of the checkout: no module of ``mmdet_pu`` or ``cellio``
  reads ``__file__`` (the only way to a repository path such as ``tools/``); it starts
  its own command lines with ``python -m``.
* ``import mmdet_pu`` (what ``custom_imports`` of every config does) registers the
  modules and loads no study; the converters (``data_prep/prepare.py``) and
  ``cellio.cli`` load no torch, mmengine or mmdet, checked in a fresh interpreter.
* No module over :data:`MAX_MODULE_LINES` lines; no function of the own-data workflow
  (``mmdet_pu.workflow``) over :data:`MAX_FUNCTION_LINES` lines.
"""
import ast
import subprocess
import sys

import pytest

from tests._data import REPO

#: The packages of the checkout whose imports the graph follows.
PACKAGES = ('mmdet_pu', 'cellio', 'studies', 'data_prep')
#: The folders whose modules are held to :data:`MAX_MODULE_LINES`.
SOURCE_DIRS = ('mmdet_pu', 'cellio', 'studies', 'data_prep', 'tools')
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
#: What the converters and the command-line helpers must not load.
HEAVY = ('torch', 'mmengine', 'mmdet')
#: The one module of ``data_prep`` that is no converter: it applies the library's
#: deletion schemes (registered in mmengine's registry) to a COCO file.
LIBRARY_USERS = {'data_prep.delete'}


def unit_of(module: str) -> str:
    """The unit ``module`` belongs to: ``mmdet_pu.<name>`` in the library, else its
    top-level package."""
    parts = module.split('.')
    return '.'.join(parts[:2]) if parts[0] == 'mmdet_pu' else parts[0]


def module_name(path) -> str:
    return '.'.join(path.relative_to(REPO).with_suffix('').parts).removesuffix('.__init__')


def imported_modules(path):
    """Absolute names of the modules of :data:`PACKAGES` that ``path`` imports (relative
    imports resolved)."""
    parts = list(path.relative_to(REPO).with_suffix('').parts)
    package = parts[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                module = '.'.join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            names = [module]
        else:
            continue
        yield from (name for name in names if name.split('.')[0] in PACKAGES)


def sources(*folders):
    return [path for folder in folders for path in sorted((REPO / folder).rglob('*.py'))]


def import_graph(skip=()):
    """``{unit: {units it imports}}`` over every module of :data:`PACKAGES` except
    ``skip`` (module names)."""
    graph = {}
    for path in sources(*PACKAGES):
        if path == REPO / 'mmdet_pu' / '__init__.py':
            continue  # the root imports its subpackages to register them
        module = module_name(path)
        if module in skip:
            continue
        source = unit_of(module)
        graph.setdefault(source, set()).update(
            unit for unit in map(unit_of, imported_modules(path)) if unit != source)
    return graph


def find_cycle(graph):
    """A list of units forming a cycle, or None."""
    state = {}

    def visit(node, path):
        state[node] = 'open'
        for child in sorted(graph.get(node, ())):
            if state.get(child) == 'open':
                return path[path.index(child):] + [child]
            if child not in state:
                found = visit(child, path + [child])
                if found:
                    return found
        state[node] = 'done'
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


def test_no_cycle_and_the_layers():
    graph = import_graph()
    assert find_cycle(graph) is None, ' -> '.join(find_cycle(graph))
    library = {unit for unit in graph if unit.startswith('mmdet_pu.')}
    # the library never imports the studies (nor the converters)
    assert not [unit for unit in library if graph[unit] & {'studies', 'data_prep'}]
    assert graph['cellio'] == set()
    assert graph['studies'] <= library | {'cellio'}
    # the layering the project relies on
    assert graph['mmdet_pu.apis'] <= {'cellio', 'mmdet_pu.engine'}
    assert 'mmdet_pu.workflow' not in graph['mmdet_pu.prior']
    assert not graph['mmdet_pu.evaluation'] & {'mmdet_pu.apis', 'mmdet_pu.prior',
                                               'mmdet_pu.workflow', 'mmdet_pu.engine'}
    # the converters need the files and command lines only
    assert import_graph(skip=LIBRARY_USERS)['data_prep'] == {'cellio'}


def test_the_library_runs_no_file_of_the_checkout():
    found = [module_name(path) for path in sources('mmdet_pu', 'cellio')
             if any(isinstance(node, ast.Name) and node.id == '__file__'
                    for node in ast.walk(ast.parse(path.read_text())))]
    assert found == []


def loaded_after(statement: str):
    """The modules of :data:`HEAVY` and ``studies`` that ``statement`` leaves loaded in
    a fresh interpreter started in the checkout."""
    check = (f'{statement}; import sys; print(sorted({{m.split(".")[0] for m in '
             f'sys.modules}} & {{{", ".join(map(repr, (*HEAVY, "studies")))}}}))')
    result = subprocess.run([sys.executable, '-c', check], cwd=REPO, capture_output=True,
                            text=True, check=True)
    return ast.literal_eval(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize('statement', [
    'import cellio.cli',
    'import data_prep.prepare',
    # every converter prepare.py can load, and its help
    'from data_prep.prepare import DATASETS; import importlib; '
    '[importlib.import_module(module) for module, _ in DATASETS.values()]',
])
def test_the_converters_and_the_command_line_helpers_load_no_torch(statement):
    assert loaded_after(statement) == []


def test_import_mmdet_pu_registers_and_loads_no_study():
    assert loaded_after('import mmdet_pu') == sorted(HEAVY)


def test_no_module_is_too_long():
    long = {str(path.relative_to(REPO)): lines for path in sources(*SOURCE_DIRS)
            if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_no_function_of_the_workflow_is_too_long():
    long = {}
    for path in sources('mmdet_pu/workflow'):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f'{module_name(path)}.{node.name}'] = lines
    assert long == {}


def test_the_check_finds_a_cycle():
    assert find_cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == ['a', 'b', 'c', 'a']
    assert find_cycle({'a': {'b'}, 'b': set()}) is None
