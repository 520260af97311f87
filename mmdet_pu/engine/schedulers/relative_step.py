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

    None may round to step 0 and those inside the schedule (``< end - begin``) must be
    distinct: rounding that breaks this (``[0.8, 0.9]`` of 5 steps both round to 4,
    which would apply ``gamma`` twice at once; ``[0.001]`` of 300 rounds to 0) is an
    error naming the fractions, the milestones and the length. A milestone at or past
    the end is never reached, as in ``MultiStepLR``: a run too short for it (e.g. 2
    iterations of ``[0.8]``, a smoke test) keeps its learning rate.

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
        milestones = self._milestones(fractions, end - begin)
        super().__init__(optimizer, milestones=milestones, gamma=gamma,
                         begin=begin, end=end, **kwargs)

    @staticmethod
    def _milestones(fractions, length):
        """``round(f * length)`` for every fraction; none 0, those below ``length``
        distinct."""
        milestones = [round(f * length) for f in fractions]
        reached = [m for m in milestones if m < length]
        if milestones[0] < 1 or len(set(reached)) < len(reached):
            raise ValueError(
                f'RelativeMultiStepLR: fractions {fractions} of a schedule of {length} '
                f'steps round to the milestones {milestones}; each must be a distinct '
                f'step in 1..{length - 1} (or past the end, never reached): use fewer or '
                'farther apart fractions, or a longer schedule')
        return milestones
