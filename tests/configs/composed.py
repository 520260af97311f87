"""What a config hands to its runner, as plain JSON data, and the stored reference.

``composed(path)`` loads a config, applies what :class:`~mmdet_pu.engine.runner.CellRunner`
applies (the top-level ``deletion`` into the loaders) and keeps the keys the runner
reads. ``composed_configs.json`` holds these for every shipped experiment config as
composed before the configs moved to one parent per dataset x model; the test that
reads it proves the move changed nothing. After a deliberate change of a config,
rewrite the entries with ``python -m tests.configs.composed CONFIG ...`` and review the
diff.
"""
import json
import sys
from pathlib import Path

from mmengine.config import Config

from mmdet_pu.datasets.deletion import apply_deletion

REFERENCE = Path(__file__).with_name('composed_configs.json')
CONFIG_ROOT = Path(__file__).resolve().parents[2] / 'configs'
RUNNER_KEYS = ('model', 'train_dataloader', 'val_dataloader', 'test_dataloader',
               'train_cfg', 'val_cfg', 'test_cfg', 'optim_wrapper', 'param_scheduler',
               'val_evaluator', 'test_evaluator', 'default_hooks', 'custom_hooks',
               'env_cfg', 'log_processor', 'log_level', 'visualizer', 'default_scope',
               'randomness', 'load_from', 'resume', 'auto_scale_lr', 'custom_imports')


def _plain(node):
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in sorted(node.items())}
    if isinstance(node, (list, tuple)):
        return [_plain(v) for v in node]
    return node


def composed(path) -> dict:
    """The runner-facing part of the config at ``path`` as JSON-comparable data."""
    cfg = apply_deletion(Config.fromfile(str(path)))
    out = {key: _plain(cfg.get(key)) for key in RUNNER_KEYS}
    out['custom_hooks'] = out['custom_hooks'] or []
    return json.loads(json.dumps(out))


def config_name(path) -> str:
    return Path(path).resolve().relative_to(CONFIG_ROOT).as_posix()


if __name__ == '__main__':
    stored = json.loads(REFERENCE.read_text()) if REFERENCE.exists() else {}
    for arg in sys.argv[1:]:
        stored[config_name(arg)] = composed(arg)
    REFERENCE.write_text(json.dumps(stored, indent=0, sort_keys=True) + '\n')
