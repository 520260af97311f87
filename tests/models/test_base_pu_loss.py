"""The four PU losses share BasePULoss: one forward and the same checks for each."""
import re

import pytest
import torch

from mmdet.registry import MODELS
import mmdet_pu  # noqa: F401  (registers the losses)
from mmdet_pu.models.losses import (BasePULoss, FocalPULoss, MultiPULoss, PULoss,
                                    QualityFocalPULoss)

#: name: (prior config, score channels, config keys of the nnPU threshold and factor)
LOSSES = {
    'PULoss': (dict(prior=0.2), 2, ('beta', 'gamma')),
    'MultiPULoss': (dict(priors=[0.2, 0.1]), 3, ('beta', 'gamma')),
    'FocalPULoss': (dict(priors=[0.2, 0.1]), 2, ('nnpu_beta', 'nnpu_gamma')),
    'QualityFocalPULoss': (dict(priors=[0.2, 0.1]), 2, ('nnpu_beta', 'nnpu_gamma')),
}
NAMES = list(LOSSES)


def build(name, **kwargs):
    return MODELS.build(dict(type=name, **LOSSES[name][0], **kwargs))


def target(name, labels):
    return (labels, torch.rand(len(labels))) if name == 'QualityFocalPULoss' else labels


def call(name, num=6, channels=None, num_labels=None, num_weights=None, **kwargs):
    """The loss ``name`` on a batch of ``num`` score rows (labels and weights of other
    lengths when given)."""
    cls_score = torch.randn(num, LOSSES[name][1] if channels is None else channels)
    labels = torch.arange(num if num_labels is None else num_labels) % 2
    weight = torch.ones(num if num_weights is None else num_weights)
    return build(name)(cls_score, target(name, labels), weight, **kwargs)


def test_the_four_pu_losses_share_the_base_and_its_forward():
    for loss_type in (PULoss, MultiPULoss, FocalPULoss, QualityFocalPULoss):
        assert issubclass(loss_type, BasePULoss)
        assert loss_type.forward is BasePULoss.forward
        assert MODELS.get(loss_type.__name__) is loss_type


@pytest.mark.parametrize('name', NAMES)
def test_a_valid_call_gives_a_float32_scalar(name):
    value = call(name)
    assert value.dtype == torch.float32 and value.dim() == 0 and torch.isfinite(value)


@pytest.mark.parametrize('name', NAMES)
def test_other_reductions_are_rejected(name):
    with pytest.raises(ValueError, match=f"^{name} is a batch-level risk and only "
                                         f"supports the 'mean' reduction, got "
                                         f"reduction_override='sum'"):
        call(name, reduction_override='sum')


@pytest.mark.parametrize('name', NAMES)
@pytest.mark.parametrize('shape', ['channels', 'one_dim'])
def test_score_shape_is_checked(name, shape):
    channels = LOSSES[name][1]
    with pytest.raises(ValueError, match=rf'^{name}: expected cls_score of shape '
                                         rf'\(N, {channels}\) \(.+\), got '):
        if shape == 'channels':
            call(name, channels=channels + 1)
        else:
            build(name)(torch.randn(6), torch.zeros(6, dtype=torch.long))


@pytest.mark.parametrize('name', NAMES)
def test_one_label_per_score_row(name):
    with pytest.raises(ValueError, match=rf'^{name}: expected 6 labels \(one per row of '
                                         rf'cls_score\), got 4$'):
        call(name, num_labels=4)


@pytest.mark.parametrize('name', NAMES)
@pytest.mark.parametrize('bad', [-1, 255])
def test_labels_outside_the_classes_and_unlabeled_are_refused(name, bad):
    """An ignore value as a label (-1, 255) is named, not an out-of-bounds index error
    (a device-side assert on CUDA); C itself is unlabeled and valid."""
    num_classes = LOSSES[name][1] - (name in ('PULoss', 'MultiPULoss'))
    labels = torch.tensor([0, num_classes, 0, num_classes, 0, 0])
    assert torch.isfinite(build(name)(torch.randn(6, LOSSES[name][1]),
                                      target(name, labels)))
    labels[2] = bad
    with pytest.raises(ValueError, match=rf'^{name}: expected labels in \[0, '
                                         rf'{num_classes}\] .* got labels from '
                                         rf'{min(bad, 0)} to {max(bad, num_classes)}; '):
        build(name)(torch.randn(6, LOSSES[name][1]), target(name, labels))


@pytest.mark.parametrize('name', NAMES)
def test_one_weight_per_score_row(name):
    with pytest.raises(ValueError, match=rf'^{name}: expected 6 label weights \(one per '
                                         rf'row of cls_score\), got 5$'):
        call(name, num_weights=5)


@pytest.mark.parametrize('name', NAMES)
def test_target_type_is_checked(name):
    labels = torch.zeros(6, dtype=torch.long)
    wrong = labels if name == 'QualityFocalPULoss' else (labels, torch.rand(6))
    other = 'FocalPULoss' if name == 'QualityFocalPULoss' else 'QualityFocalPULoss'
    with pytest.raises(ValueError, match=rf'^{name}: expected the target to be .* '
                                         rf'take {other}$'):
        build(name)(torch.randn(6, LOSSES[name][1]), wrong)


@pytest.mark.parametrize('name', NAMES)
@pytest.mark.parametrize('option,value,match', [
    ('estimator', 'positive',
     "loss_cls.estimator: expected one of ('union', 'unlabeled') for {name}, "
     "got 'positive'"),
    ('nonnegative', 'relu',
     "loss_cls.nonnegative: expected one of ('clamp', 'nnpu') for {name}, got 'relu'"),
])
def test_risk_options_are_checked(name, option, value, match):
    with pytest.raises(ValueError, match='^' + re.escape(match.format(name=name)) + '$'):
        build(name, **{option: value})


@pytest.mark.parametrize('name', NAMES)
def test_nnpu_options_are_checked_under_their_config_keys(name):
    beta, gamma = LOSSES[name][2]
    with pytest.raises(ValueError, match=re.escape(
            f"loss_cls.{beta} / loss_cls.{gamma}: only used with nonnegative='nnpu' "
            f'in {name}, got {beta}=0.1, {gamma}=1.0')):
        build(name, **{beta: 0.1})
    with pytest.raises(ValueError, match=re.escape(
            f'loss_cls.{beta}: expected {beta} >= 0, got -1.0')):
        build(name, nonnegative='nnpu', **{beta: -1.0})
    with pytest.raises(ValueError, match=re.escape(
            f'loss_cls.{gamma}: expected 0 < {gamma} <= 1, got 1.5')):
        build(name, nonnegative='nnpu', **{gamma: 1.5})


@pytest.mark.parametrize('name', NAMES)
def test_priors_are_checked_under_their_config_key(name):
    (key, _), = LOSSES[name][0].items()
    bad = 1.5 if key == 'prior' else [0.2, 1.5]
    index = '' if key == 'prior' else r'\[1\]'
    with pytest.raises(ValueError, match=rf'^loss_cls\.{key} \({name}\){index}: '
                                         rf'expected a class prior with 0 < prior < 1, '
                                         rf'got 1\.5$'):
        MODELS.build(dict(type=name, **{key: bad}))
    loss = build(name)
    assert loss.prior_key == key and loss.class_priors.dim() == 1
