"""The runner of every mmdet_pu config: mmengine's ``Runner`` that first hands the
config's deletion scheme to its training and validation loaders, and formats the
config's text once (:mod:`.config_text`).

A config names its incomplete-annotation protocol once, in the top-level key
``deletion`` (docs/method.md#datasets-and-deletion); ``runner_type = 'CellRunner'``
(``configs/_base_/default_runtime.py``) makes ``tools/train.py``, ``tools/test.py`` and
mmdet's own tools build this runner, which sets the ``deletion`` of the cell datasets of
``train_dataloader`` and ``val_dataloader``. The test loader keeps the complete labels.

Each runner also gets a visualizer of its own (:meth:`CellRunner.build_visualizer`).
"""
import itertools

from mmengine.registry import RUNNERS
from mmengine.runner import Runner

from ...datasets.data_classes import apply_data_classes
from ...datasets.deletion import apply_deletion
from .config_text import OnceFormattedConfig


@RUNNERS.register_module()
class CellRunner(Runner):
    """``Runner`` whose :meth:`from_cfg` applies the classes of the prepared data where
    the config asks for them (:func:`~mmdet_pu.datasets.data_classes.apply_data_classes`)
    and the config's ``deletion`` first
    (:func:`~mmdet_pu.datasets.deletion.apply_deletion`), and keeps the config as an
    :class:`~.config_text.OnceFormattedConfig`."""

    _visualizers = itertools.count()

    @classmethod
    def from_cfg(cls, cfg) -> 'Runner':
        return super().from_cfg(
            OnceFormattedConfig.of(apply_deletion(apply_data_classes(cfg))))

    def build_visualizer(self, visualizer=None):
        """mmengine's, with a name no other runner of the process has used.

        Visualizers are named, process-wide instances, and mmdet's configs (ours too)
        name theirs ``'visualizer'``: mmengine would hand every later runner of the
        process the first one's visualizer, which writes their config and scalars under
        the first run's ``log_dir`` (two trainings in one notebook, forked runs).
        """
        if isinstance(visualizer, dict):
            name = visualizer.get('name', 'visualizer')
            visualizer = dict(visualizer, name=f'{name}:{self._experiment_name}:'
                                               f'{next(self._visualizers)}')
        return super().build_visualizer(visualizer)
