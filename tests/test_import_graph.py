"""No import cycle between the subpackages (and top-level modules) of mmdet_pu."""
import ast

from tests._data import REPO

PACKAGE = REPO / 'mmdet_pu'


def unit_of(module: str) -> str:
    """``mmdet_pu.<name>``: the subpackage or top-level module ``module`` belongs to."""
    return '.'.join(module.split('.')[:2])


def imported_modules(path):
    """Absolute names of the ``mmdet_pu`` modules ``path`` imports (relative imports
    resolved)."""
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
        yield from (name for name in names if name.startswith('mmdet_pu.'))


def import_graph():
    """``{unit: {units it imports}}`` over every file of the package."""
    graph = {}
    for path in PACKAGE.rglob('*.py'):
        if path.parent == PACKAGE and path.name == '__init__.py':
            continue  # the root imports its subpackages to register them
        module = '.'.join(path.relative_to(REPO).with_suffix('').parts)
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


def test_no_cycle_between_subpackages():
    graph = import_graph()
    assert find_cycle(graph) is None, ' -> '.join(find_cycle(graph))
    # the layering the project relies on
    assert graph['mmdet_pu.apis'] <= {'mmdet_pu.io', 'mmdet_pu.engine'}
    # prior is a library; the studies that train with it live in experiments
    assert 'mmdet_pu.experiments' not in graph['mmdet_pu.prior']
    assert not graph['mmdet_pu.evaluation'] & {'mmdet_pu.apis', 'mmdet_pu.prior',
                                               'mmdet_pu.experiments'}


def test_the_check_finds_a_cycle():
    assert find_cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == ['a', 'b', 'c', 'a']
    assert find_cycle({'a': {'b'}, 'b': set()}) is None
