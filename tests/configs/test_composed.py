"""Every experiment config hands its runner what it did before the configs moved to one
parent per dataset x model (``composed_configs.json``, see :mod:`tests.configs.composed`).

The one deliberate difference, the CPU schedule's learning-rate step written as a fraction
of the schedule (``RelativeMultiStepLR(fractions=[0.8])`` instead of
``MultiStepLR(milestones=[240])``), is proved equivalent in
``tests/engine/test_relative_step.py``.
"""
import json

import pytest

import mmdet_pu  # noqa: F401
from tests.configs.composed import CONFIG_ROOT, REFERENCE, composed, config_name

CONFIGS = sorted(p for p in CONFIG_ROOT.rglob('*.py') if '_base_' not in p.parts)
STORED = json.loads(REFERENCE.read_text())


def test_every_config_has_a_reference():
    assert {config_name(p) for p in CONFIGS} == set(STORED)


@pytest.mark.parametrize('path', CONFIGS, ids=config_name)
def test_composition_is_unchanged(path):
    now, before = composed(path), STORED[config_name(path)]
    changed = sorted(key for key in before if now.get(key) != before[key])
    assert not changed, f'{config_name(path)}: {changed} differ from the reference'
