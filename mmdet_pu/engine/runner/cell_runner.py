"""The runner of every mmdet_pu config: mmengine's ``Runner`` that first hands the
config's deletion scheme to its training and validation loaders, and formats the
config's text once (:mod:`.config_text`).

A config names its incomplete-annotation protocol once, in the top-level key
``deletion`` (docs/method.md#datasets-and-deletion); ``runner_type = 'CellRunner'``
(``configs/_base_/default_runtime.py``) makes ``tools/train.py``, ``tools/test.py`` and
mmdet's own tools build this runner, which sets the ``deletion`` of the cell datasets of
``train_dataloader`` and ``val_dataloader``. The test loader keeps the complete labels.
"""
from mmengine.registry import RUNNERS
from mmengine.runner import Runner

from ...datasets.deletion import apply_deletion
from .config_text import OnceFormattedConfig


@RUNNERS.register_module()
class CellRunner(Runner):
    """``Runner`` whose :meth:`from_cfg` applies the config's ``deletion`` first
    (:func:`~mmdet_pu.datasets.deletion.apply_deletion`) and keeps the config as an
    :class:`~.config_text.OnceFormattedConfig`."""

    @classmethod
    def from_cfg(cls, cfg) -> 'Runner':
        return super().from_cfg(OnceFormattedConfig.of(apply_deletion(cfg)))
