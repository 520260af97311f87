from . import hooks, runner  # noqa: F401
