from . import hooks, runner, schedulers  # noqa: F401
