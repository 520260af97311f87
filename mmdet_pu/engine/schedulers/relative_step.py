"""A learning-rate step placed at a fraction of the schedule."""
from mmengine.optim.scheduler.lr_scheduler import LRSchedulerMixin
from mmengine.optim.scheduler.param_scheduler import INF, MultiStepParamScheduler

from mmdet.registry import PARAM_SCHEDULERS


@PARAM_SCHEDULERS.register_module()
class RelativeMultiStepLR(LRSchedulerMixin, MultiStepParamScheduler):
    """mmengine's ``MultiStepLR`` with milestones given as fractions of its span.

    The milestones are ``round(f * (end - begin))`` for every ``f`` in ``fractions``.
    The runner sets ``end`` to the training length when the config does not (an
    iteration-based loop's ``max_iters``), so changing ``train_cfg.max_iters`` moves the
    steps with it: with 300 iterations ``fractions=[0.8]`` steps at iteration 240, as
    ``MultiStepLR(milestones=[240])`` does.

    Args:
        optimizer: wrapped optimizer.
        fractions (list[float]): increasing values in (0, 1).
        gamma (float): multiplicative factor of each step. Defaults to 0.1.
        begin (int): step at which the schedule starts. Defaults to 0.
        end (int): step at which it ends; must be finite (set by the runner).
        **kwargs: ``last_step``, ``by_epoch``, ``verbose`` as ``MultiStepLR``.
    """

    def __init__(self, optimizer, fractions, gamma=0.1, begin=0, end=INF, **kwargs):
        fractions = [float(f) for f in fractions]
        if not fractions or fractions != sorted(set(fractions)) \
                or not 0 < fractions[0] or not fractions[-1] < 1:
            raise ValueError('RelativeMultiStepLR: fractions must be increasing values in '
                             f'(0, 1), got {fractions}')
        if end == INF:
            raise ValueError('RelativeMultiStepLR needs a finite end: build it through a '
                             "runner with an iteration- or epoch-based train loop, or "
                             'give end')
        self.fractions = fractions
        milestones = [round(f * (end - begin)) for f in fractions]
        super().__init__(optimizer, milestones=milestones, gamma=gamma,
                         begin=begin, end=end, **kwargs)
