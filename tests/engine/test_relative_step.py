"""RelativeMultiStepLR: a step at a fraction of the schedule, equal to MultiStepLR's."""
import pytest
import torch
from mmengine.optim.scheduler import MultiStepLR

from mmdet_pu.engine.schedulers import RelativeMultiStepLR


def learning_rates(scheduler_cls, steps, **kwargs):
    optimizer = torch.optim.Adam([torch.zeros(1, requires_grad=True)], lr=1e-3)
    scheduler = scheduler_cls(optimizer, by_epoch=False, **kwargs)
    rates = []
    for _ in range(steps):
        rates.append(optimizer.param_groups[0]['lr'])
        optimizer.step()
        scheduler.step()
    return rates


def test_the_cpu_schedule_steps_at_iteration_240_of_300_as_before():
    relative = learning_rates(RelativeMultiStepLR, 300, fractions=[0.8], end=300)
    absolute = learning_rates(MultiStepLR, 300, milestones=[240], end=300)
    assert relative == absolute
    assert relative[239] == pytest.approx(1e-3) and relative[240] == pytest.approx(1e-4)


def test_the_step_follows_the_length():
    rates = learning_rates(RelativeMultiStepLR, 600, fractions=[0.5, 0.8], end=600)
    assert [rates[i] for i in (299, 300, 479, 480)] == pytest.approx(
        [1e-3, 1e-4, 1e-4, 1e-5])


def test_a_milestone_past_a_short_schedule_is_never_reached():
    """2 iterations of [0.8] (a smoke run): the step at 2 never comes, as MultiStepLR's."""
    relative = learning_rates(RelativeMultiStepLR, 2, fractions=[0.8], end=2)
    assert relative == learning_rates(MultiStepLR, 2, milestones=[2], end=2)
    assert relative == pytest.approx([1e-3, 1e-3])
    assert learning_rates(RelativeMultiStepLR, 2, fractions=[0.8, 0.9], end=2) == relative


@pytest.mark.parametrize('kwargs, message', [
    (dict(fractions=[0.8]), 'needs a finite end'),
    (dict(fractions=[0.8, 0.5], end=10), 'increasing values in'),
    (dict(fractions=[1.0], end=10), 'increasing values in'),
    # rounding makes the milestones collide, reach 0 or the end of the schedule
    (dict(fractions=[0.8, 0.9], end=5),
     r'fractions \[0\.8, 0\.9\] of a schedule of 5 steps round to the milestones \[4, 4\]'),
    (dict(fractions=[0.001], end=300), r'round to the milestones \[0\]; each must be a '
                                       r'distinct step in 1\.\.299'),
    (dict(fractions=[0.1, 0.5], begin=100, end=102), r'schedule of 2 steps round to '
                                                     r'the milestones \[0, 1\]')])
def test_bad_settings_are_errors(kwargs, message):
    optimizer = torch.optim.Adam([torch.zeros(1, requires_grad=True)])
    with pytest.raises(ValueError, match=message):
        RelativeMultiStepLR(optimizer, **kwargs)
