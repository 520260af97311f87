"""Checkpoints spaced so that a training of any length can resume."""
from mmengine.hooks import CheckpointHook

from mmdet.registry import HOOKS


@HOOKS.register_module()
class ResumableCheckpointHook(CheckpointHook):
    """mmengine's ``CheckpointHook`` by iteration, saving at least ``per_training``
    times per training.

    One fixed interval suits one schedule length: 500 iterations save nothing before the
    end of the 300-iteration CPU schedule, so an interrupted training there would start
    again from its first iteration (``tools/train.py --resume``, ``tools/repeat.py``).
    This hook saves every ``min(interval, max(1, max_iters // per_training))`` iterations
    and at the last one: every 100 of 300 iterations, every 500 of the paper's 2,580. With
    ``max_keep_ckpts=1`` only the latest stays on disk. In ``default_runtime.py``'s
    ``default_hooks``.

    Args:
        per_training (int): At least this many checkpoints per training (>= 1).
        **kwargs: ``CheckpointHook``'s arguments (``by_epoch=False``).
    """

    def __init__(self, per_training: int = 3, **kwargs) -> None:
        super().__init__(**kwargs)
        if self.by_epoch:
            raise ValueError('ResumableCheckpointHook saves by iteration: by_epoch=False')
        if not isinstance(per_training, int) or per_training < 1:
            raise ValueError(f'per_training must be an int >= 1, got {per_training!r}')
        self.per_training = per_training

    def before_train(self, runner) -> None:
        super().before_train(runner)
        spacing = max(1, runner.max_iters // self.per_training)
        if spacing < self.interval:
            self.interval = spacing
            runner.logger.info(f'Checkpoint every {spacing} iterations (at least '
                               f'{self.per_training} in {runner.max_iters})')
