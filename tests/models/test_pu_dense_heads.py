"""Dense PU heads: one classification-loss call per mini-batch, every other loss as mmdet's
(docs/method.md#dense-detectors)."""
import pytest
import torch
import torch.nn as nn

from mmdet.registry import MODELS
import mmdet_pu  # noqa: F401  (registers the heads and losses)
from tests.models._dense_detectors import (DENSE, data_samples, dense_head_cfg,
                                           head_strides)

SIZE = 128
NUM_CLASSES = 2
PRIORS = [0.01, 0.02]


def features(head_cfg, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(2, head_cfg.in_channels, SIZE // s, SIZE // s, generator=gen)
            for s in head_strides(head_cfg)]


def head_losses(head, feats, seed=1):
    losses = head.loss(feats, data_samples(2, NUM_CLASSES, SIZE, seed))
    return {key: sum(value) if isinstance(value, (list, tuple)) else value
            for key, value in losses.items()}


def twin_heads(name, loss_cls=None, mmdet_type=None):
    """mmdet's head and the PU head with the same weights."""
    _, default_type, pu_type, _ = DENSE[name]
    cfg = dense_head_cfg(name, NUM_CLASSES)
    if loss_cls is not None:
        cfg.loss_cls = loss_cls
    reference = MODELS.build(dict(cfg, type=mmdet_type or default_type))
    pooled = MODELS.build(dict(cfg, type=pu_type))
    pooled.load_state_dict(reference.state_dict())
    return reference, pooled


def rtmdet_plain_cfg():
    """mmdet's RTMDetHead (the base of RTMDetSepBNHead) for the same detector."""
    cfg = dense_head_cfg('rtmdet', NUM_CLASSES)
    for key in ('share_conv', 'pred_kernel_size', 'exp_on_reg', 'norm_cfg'):
        cfg.pop(key)
    return cfg


@pytest.mark.parametrize('name', list(DENSE))
def test_with_the_detectors_own_loss_the_losses_equal_mmdets(name):
    """FocalLoss / QualityFocalLoss are sums over a shared normaliser: pooling the
    levels into one call changes nothing, and every other loss is mmdet's."""
    reference, pooled = twin_heads(name)
    feats = features(dense_head_cfg(name, NUM_CLASSES))
    expected = head_losses(reference, feats)
    actual = head_losses(pooled, feats)
    assert set(actual) == set(expected)
    assert expected['loss_cls'] > 0
    for key in expected:
        assert actual[key].dim() == 0
        torch.testing.assert_close(actual[key], expected[key], rtol=1e-5, atol=1e-7)


def test_rtmdet_head_equals_mmdets():
    cfg = rtmdet_plain_cfg()
    reference = MODELS.build(dict(cfg, type='RTMDetHead'))
    pooled = MODELS.build(dict(cfg, type='PURTMDetHead'))
    pooled.load_state_dict(reference.state_dict())
    feats = features(cfg)
    expected = head_losses(reference, feats)
    actual = head_losses(pooled, feats)
    for key in expected:
        torch.testing.assert_close(actual[key], expected[key], rtol=1e-5, atol=1e-7)


class LossSpy(nn.Module):
    """Wraps a loss and records the inputs of every call."""

    def __init__(self, loss):
        super().__init__()
        self.loss = loss
        self.calls = []

    def forward(self, cls_score, target, weight=None, **kwargs):
        self.calls.append((cls_score, target, weight))
        return self.loss(cls_score, target, weight, **kwargs)


def concat(calls):
    scores = torch.cat([c[0] for c in calls])
    if isinstance(calls[0][1], tuple):
        target = tuple(torch.cat(parts) for parts in zip(*[c[1] for c in calls]))
        labels = target[0]
    else:
        target = labels = torch.cat([c[1] for c in calls])
    weight = None if calls[0][2] is None else torch.cat([c[2] for c in calls])
    return scores, target, weight, labels


@pytest.mark.parametrize('name', list(DENSE))
def test_pu_risk_is_estimated_once_over_all_levels_and_images(name):
    # mmdet's head needs use_sigmoid in the dict (the PU heads fill it in)
    loss_cls = dict(type=DENSE[name][3], priors=PRIORS, use_sigmoid=True)
    reference, pooled = twin_heads(name, loss_cls)
    feats = features(dense_head_cfg(name, NUM_CLASSES))
    reference.loss_cls = LossSpy(reference.loss_cls)
    pooled.loss_cls = LossSpy(pooled.loss_cls)
    per_level = head_losses(reference, feats)['loss_cls']
    actual = head_losses(pooled, feats)
    assert len(pooled.loss_cls.calls) == 1
    # the direct evaluation on every location of the batch (both images, all levels)
    scores, target, weight, labels = concat(reference.loss_cls.calls)
    expected = pooled.loss_cls.loss(scores, target, weight)
    torch.testing.assert_close(actual['loss_cls'], expected, rtol=1e-6, atol=0)
    assert torch.equal(pooled.loss_cls.calls[0][0], scores)
    level_sizes = [c[0].size(0) for c in reference.loss_cls.calls]
    level = torch.repeat_interleave(torch.arange(len(level_sizes)),
                                    torch.tensor(level_sizes))
    positive_levels = set(level[labels < NUM_CLASSES].tolist())
    assert len(positive_levels) > 1 or name == 'fcos'
    if name != 'fcos':  # mmdet's per-level calls give another estimate
        assert len(reference.loss_cls.calls) == len(level_sizes) > 1
        assert not torch.isclose(per_level, expected, rtol=1e-2)


@pytest.mark.parametrize('name', list(DENSE))
def test_the_bracket_per_level_gets_each_samples_fpn_level(name):
    """With ``per_level=True`` the head passes every pooled sample's level, in the
    pooled order (docs/method.md#level-wise-bracket)."""
    # priors at which some levels' brackets are negative and some not
    loss_cls = dict(type=DENSE[name][3], priors=[0.4, 0.4], use_sigmoid=True,
                    per_level=True)
    _, pooled = twin_heads(name, loss_cls)
    feats = features(dense_head_cfg(name, NUM_CLASSES))
    calls = []
    pooled.loss_cls.register_forward_hook(
        lambda module, args, kwargs, out: calls.append((args, kwargs)), with_kwargs=True)
    actual = head_losses(pooled, feats)['loss_cls']
    (args, kwargs), = calls
    anchors = pooled.prior_generator.num_base_priors
    sizes = [2 * f.size(2) * f.size(3) * anchors[level]
             for level, f in enumerate(feats)]  # two images per level, level-major
    levels = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    assert torch.equal(kwargs['groups'], levels) and kwargs['num_groups'] == len(sizes)
    assert 0 < pooled.loss_cls.pop_correction_share() < 1  # some levels clamped
    scores, target, weight = args
    pooled_risk = MODELS.build(dict(loss_cls, per_level=False))(scores, target, weight)
    assert actual > pooled_risk


@pytest.mark.parametrize('name', list(DENSE))
def test_gradients_reach_every_level(name):
    _, pooled = twin_heads(name, dict(type=DENSE[name][3], priors=PRIORS,
                                      use_sigmoid=True))
    feats = [f.requires_grad_(True) for f in features(dense_head_cfg(name, NUM_CLASSES))]
    head_losses(pooled, feats)['loss_cls'].backward()
    assert all(f.grad.abs().sum() > 0 for f in feats)


@pytest.mark.parametrize('name', list(DENSE))
def test_builds_a_sigmoid_classifier_for_the_pu_loss(name):
    """mmdet's heads read use_sigmoid from the loss dict; the PU heads fill it in."""
    cfg = dense_head_cfg(name, NUM_CLASSES)
    cfg.loss_cls = dict(type=DENSE[name][3], priors=PRIORS)
    head = MODELS.build(dict(cfg, type=DENSE[name][2]))
    assert head.use_sigmoid_cls and head.cls_out_channels == NUM_CLASSES
    assert head.loss_cls.priors.tolist() == pytest.approx(PRIORS)


@pytest.mark.parametrize('loss_cls,match', [
    (dict(type='FocalPULoss', priors=[0.01, 0.01, 0.01]),
     r'model\.bbox_head\.loss_cls\.priors: expected 2 value\(s\), one per class '
     r'\(bbox_head\.num_classes=2\), got 3'),
    (dict(type='FocalPULoss', prior=0.01),
     r'model\.bbox_head\.loss_cls\.prior: expected 2 value\(s\).*takes '
     r'loss_cls\.priors'),
])
def test_prior_count_is_checked_when_the_head_is_built(loss_cls, match):
    cfg = dense_head_cfg('retinanet', NUM_CLASSES)
    cfg.loss_cls = loss_cls
    with pytest.raises(ValueError, match=match):
        MODELS.build(dict(cfg, type='PURetinaHead'))
