"""FocalPULoss / QualityFocalPULoss against their formulas (docs/method.md#dense-detectors)."""
import math

import pytest
import torch
from mmengine.config import Config

from mmdet.models.losses import FocalLoss, QualityFocalLoss
from mmdet.registry import MODELS
import mmdet_pu  # noqa: F401  (registers the losses)
from mmdet_pu.models.losses import FocalPULoss, PULoss, QualityFocalPULoss

GAMMA, ALPHA, BETA = 2.0, 0.25, 2.0


def sigmoid(x):
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


def softplus(x):
    """log(1 + e^x), so -log p = softplus(-x) and -log(1 - p) = softplus(x)."""
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


def channel_loss(kind, x, present, quality=1.0):
    """One class channel of the detector's own loss, written out."""
    p = sigmoid(x)
    if kind == 'focal':
        if present:
            return ALPHA * (1 - p) ** GAMMA * softplus(-x)
        return (1 - ALPHA) * p ** GAMMA * softplus(x)
    y = quality if present else 0.0
    return abs(y - p) ** BETA * (y * softplus(-x) + (1 - y) * softplus(x))


def location_loss(kind, row, label, quality=1.0):
    """H(c, label) over the C channels; label C is the background."""
    return sum(channel_loss(kind, x, j == label, quality) for j, x in enumerate(row))


def reference_risks(kind, logits, labels, weights, quality, priors, estimator='union'):
    """R_p and the bracket r of Eq. 15 (Eq. 8 for one class), location by location."""
    logits, labels = logits.tolist(), labels.tolist()
    weights, quality = weights.tolist(), quality.tolist()
    num_classes = len(priors)
    positive_risk = positive_bg = 0.0
    for m in range(num_classes):
        members = [i for i, lab in enumerate(labels) if lab == m and weights[i] > 0]
        n_pm = sum(weights[i] for i in members)
        for i in members:
            coef = priors[m] / n_pm * weights[i]
            positive_risk += coef * location_loss(kind, logits[i], m, quality[i])
            positive_bg += coef * location_loss(kind, logits[i], num_classes)
    pool = [i for i, lab in enumerate(labels) if weights[i] > 0 and (
        estimator == 'union' or lab == num_classes)]
    total = sum(weights[i] for i in pool)
    marginal = sum(weights[i] * location_loss(kind, logits[i], num_classes)
                   for i in pool) / total if pool else 0.0
    return positive_risk, marginal - positive_bg


def reference_loss(kind, logits, labels, weights, quality, priors, estimator='union',
                   risk_scale='per_positive'):
    positive_risk, negative_risk = reference_risks(kind, logits, labels, weights,
                                                   quality, priors, estimator)
    risk = positive_risk + max(0.0, negative_risk)
    return risk / sum(priors) if risk_scale == 'per_positive' else risk


def make_loss(kind, priors, **kwargs):
    key = dict(prior=priors[0]) if len(priors) == 1 else dict(priors=priors)
    if kind == 'focal':
        return FocalPULoss(**key, gamma=GAMMA, alpha=ALPHA, **kwargs)
    return QualityFocalPULoss(**key, beta=BETA, **kwargs)


def call(loss, kind, logits, labels, weights=None, quality=None):
    target = labels if kind == 'focal' else (labels, quality)
    return loss(logits, target, weights)


# Hand-made batch: 8 locations, 2 classes; labels 2 = unlabeled, weight 0 = ignored.
HAND_LOGITS = torch.tensor([[2.0, -1.0], [-0.5, -3.0], [0.3, 1.5], [-2.0, -2.0],
                            [-1.0, -0.5], [3.0, -0.2], [-2.2, -1.2], [0.5, 1.0]])
HAND_LABELS = torch.tensor([0, 2, 1, 2, 2, 0, 2, 1])
HAND_WEIGHTS = torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0, 0.5, 1.0, 1.0])
HAND_QUALITY = torch.tensor([0.8, 0.0, 0.6, 0.0, 0.0, 0.9, 0.0, 0.3])


def random_batch(num_classes, seed, num=60, weights='random'):
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(num, num_classes, generator=gen) * 2
    labels = torch.randint(0, num_classes + 1, (num,), generator=gen)
    labels[torch.rand(num, generator=gen) < 0.6] = num_classes  # mostly unlabeled
    w = torch.ones(num)
    if weights == 'random':
        w = torch.rand(num, generator=gen)
        w[torch.rand(num, generator=gen) < 0.2] = 0
    quality = torch.rand(num, generator=gen) * (labels < num_classes)
    return logits, labels, w, quality


@pytest.mark.parametrize('kind', ['focal', 'quality'])
@pytest.mark.parametrize('priors', [[0.1, 0.05], [0.4, 0.5]])
@pytest.mark.parametrize('estimator', ['union', 'unlabeled'])
@pytest.mark.parametrize('risk_scale', ['per_positive', 'per_location'])
def test_hand_made_batch_matches_formula(kind, priors, estimator, risk_scale):
    loss = make_loss(kind, priors, estimator=estimator, risk_scale=risk_scale)
    actual = call(loss, kind, HAND_LOGITS, HAND_LABELS, HAND_WEIGHTS, HAND_QUALITY)
    expected = reference_loss(kind, HAND_LOGITS, HAND_LABELS, HAND_WEIGHTS,
                              HAND_QUALITY, priors, estimator, risk_scale)
    assert actual.dtype == torch.float32 and actual.dim() == 0
    assert actual.item() == pytest.approx(expected, rel=1e-5)
    # the batch covers both sides of the max{0, .}: only the union estimate with the
    # small priors leaves the bracket positive
    _, negative_risk = reference_risks(kind, HAND_LOGITS, HAND_LABELS, HAND_WEIGHTS,
                                       HAND_QUALITY, priors, estimator)
    assert (negative_risk > 0) == (priors == [0.1, 0.05] and estimator == 'union')


@pytest.mark.parametrize('kind', ['focal', 'quality'])
@pytest.mark.parametrize('num_classes', [1, 3])
@pytest.mark.parametrize('seed', [0, 1])
def test_random_batches_match_formula(kind, num_classes, seed):
    priors = [0.02, 0.01, 0.005][:num_classes]
    logits, labels, w, quality = random_batch(num_classes, seed)
    actual = call(make_loss(kind, priors), kind, logits, labels, w, quality)
    expected = reference_loss(kind, logits, labels, w, quality, priors)
    assert actual.item() == pytest.approx(expected, rel=1e-5)


def reference_per_level_loss(kind, logits, labels, weights, quality, priors, levels):
    """R_p + sum_l max{0, r_l} over sum_m pi_m, the shares r_l written out level by level:
    the level's own unlabeled-and-positive sum over the batch's count, less its labeled
    positives' share of the subtraction (docs/method.md#level-wise-bracket)."""
    num_classes = len(priors)
    rows = range(len(labels))
    counts = [sum(weights[i].item() for i in rows if labels[i] == m)
              for m in range(num_classes)]
    total = weights.sum().item()
    positive_risk, brackets = 0.0, []
    for m in range(num_classes):
        positive_risk += sum(priors[m] / counts[m] * weights[i].item()
                             * location_loss(kind, logits[i].tolist(), m, quality[i].item())
                             for i in rows if labels[i] == m and weights[i] > 0)
    for level in sorted(set(levels.tolist())):
        r = 0.0
        for i in (i for i in rows if levels[i] == level and weights[i] > 0):
            h_bg = location_loss(kind, logits[i].tolist(), num_classes)
            r += weights[i].item() * h_bg / total
            if labels[i] < num_classes:
                r -= priors[labels[i]] / counts[labels[i]] * weights[i].item() * h_bg
        brackets.append(r)
    return (positive_risk + sum(max(0.0, r) for r in brackets)) / sum(priors), brackets


@pytest.mark.parametrize('kind', ['focal', 'quality'])
@pytest.mark.parametrize('seed', [0, 1, 2])
def test_the_bracket_per_level_matches_its_formula(kind, seed):
    logits, labels, w, quality = random_batch(2, seed)
    levels = torch.arange(len(labels)) * 3 // len(labels)  # three levels of 20
    priors = [0.6, 0.35]
    loss = make_loss(kind, priors, per_level=True)
    target = labels if kind == 'focal' else (labels, quality)
    actual = loss(logits, target, w, groups=levels, num_groups=3)
    expected, brackets = reference_per_level_loss(kind, logits, labels, w, quality,
                                                  priors, levels)
    assert actual.item() == pytest.approx(expected, rel=1e-5)
    # the levels' shares add up to the mini-batch's bracket; these batches clamp some
    # levels and not others, so the level-wise risk lies above the pooled one
    _, pooled = reference_risks(kind, logits, labels, w, quality, priors)
    assert sum(brackets) == pytest.approx(pooled, rel=1e-5)
    assert min(brackets) < 0 < max(brackets)
    assert actual.item() > call(make_loss(kind, priors), kind, logits, labels, w,
                                quality).item() + 1e-3
    assert loss.pop_correction_share() == pytest.approx(
        sum(r < 0 for r in brackets) / 3)


def test_the_bracket_per_level_is_the_pooled_one_when_no_level_is_clamped():
    logits, labels, w, _ = random_batch(1, seed=3)
    levels = (torch.arange(len(labels)) % 2)
    loss = FocalPULoss(prior=0.001, per_level=True)
    assert torch.allclose(loss(logits, labels, w, groups=levels, num_groups=2),
                          FocalPULoss(prior=0.001)(logits, labels, w), rtol=1e-6)
    assert loss.pop_correction_share() == 0


def test_a_level_without_labeled_cells_trains_on_all_its_locations():
    """Its share is its locations' background loss over the batch's count, never
    clamped; the gradient pushes every one of them towards the background."""
    logits = torch.tensor([[3.0], [2.0], [1.0], [0.5]], requires_grad=True)
    labels = torch.tensor([0, 1, 1, 1])  # one labeled positive, on level 0
    levels = torch.tensor([0, 0, 1, 1])
    loss = FocalPULoss(prior=0.9, per_level=True)
    loss(logits, labels, None, groups=levels, num_groups=2).backward()
    assert logits.grad[0] < 0 and logits.grad[1] == 0  # level 0 clamped: P pulled up
    assert (logits.grad[2:] > 0).all()
    assert loss.pop_correction_share() == 0.5


def test_one_class_buffer_is_prior_and_several_are_priors():
    one = FocalPULoss(prior=0.01)
    assert one.prior.dim() == 0 and not hasattr(one, 'priors')
    assert set(one.state_dict()) == {'prior'}
    several = QualityFocalPULoss(priors=[0.01, 0.02])
    assert set(several.state_dict()) == {'priors'}
    # prior=p and priors=[p] are the same loss
    logits, labels, w, quality = random_batch(1, seed=2)
    assert FocalPULoss(prior=0.03)(logits, labels, w).item() == \
        FocalPULoss(priors=[0.03])(logits, labels, w).item()


def test_unit_focal_parameters_give_the_binary_pu_loss():
    """gamma = 0, alpha = 1/2: the focal terms are half the sigmoid BCE, so the one-class
    risk is half of PULoss's (use_sigmoid); QFL with beta = 0 and targets 1 is PULoss."""
    logits, labels, w, _ = random_batch(1, seed=3)
    binary = PULoss(0.2, use_sigmoid=True)(logits, labels, w)
    focal = FocalPULoss(prior=0.2, gamma=0.0, alpha=0.5, risk_scale='per_location')
    assert focal(logits, labels, w).item() == pytest.approx(binary.item() / 2, rel=1e-6)
    quality = QualityFocalPULoss(prior=0.2, beta=0.0, risk_scale='per_location')
    ones = torch.ones_like(w)
    assert quality(logits, (labels, ones), w).item() == pytest.approx(binary.item(),
                                                                      rel=1e-6)


def complete_batch(num_classes, seed):
    """Every cell labeled: the labels are the truth, the empirical shares the priors."""
    logits, labels, w, quality = random_batch(num_classes, seed)
    kept = w > 0
    priors = [(w[kept & (labels == m)].sum() / w[kept].sum()).item()
              for m in range(num_classes)]
    return logits, labels, w, quality, priors


@pytest.mark.parametrize('num_classes', [1, 3])
@pytest.mark.parametrize('nonnegative', ['clamp', 'nnpu'])
def test_complete_labels_with_true_priors_give_the_focal_loss(num_classes, nonnegative):
    """With pi_m = N_p^m / N the U ∪ P risk per expected positive is mmdet's FocalLoss
    normalised by the number of positives (docs/method.md#dense-detectors)."""
    logits, labels, w, _, priors = complete_batch(num_classes, seed=4)
    num_pos = w[labels < num_classes].sum()
    expected = FocalLoss(gamma=GAMMA, alpha=ALPHA)(logits, labels, w,
                                                   avg_factor=num_pos)
    loss = FocalPULoss(priors=priors, gamma=GAMMA, alpha=ALPHA, nonnegative=nonnegative)
    torch.testing.assert_close(loss(logits, labels, w), expected, rtol=1e-5, atol=0)


@pytest.mark.parametrize('num_classes', [1, 3])
def test_complete_labels_with_true_priors_give_the_quality_focal_loss(num_classes):
    logits, labels, w, quality, priors = complete_batch(num_classes, seed=5)
    num_pos = w[labels < num_classes].sum()
    expected = QualityFocalLoss(beta=BETA)(logits, (labels, quality), w,
                                           avg_factor=num_pos)
    loss = QualityFocalPULoss(priors=priors, beta=BETA)
    torch.testing.assert_close(loss(logits, (labels, quality), w), expected,
                               rtol=1e-5, atol=0)


@pytest.mark.parametrize('kind', ['focal', 'quality'])
def test_prior_to_zero_tends_to_the_all_background_loss(kind):
    """pi -> 0 does not give the detector's loss: the risk per location tends to
    E_{U ∪ P}[H(c, bg)], every location as background; per expected positive it is the
    risk per location divided by sum_m pi_m."""
    logits, labels, w, quality = random_batch(2, seed=6)
    kept = w > 0
    all_background = sum(
        w[i].item() * location_loss(kind, logits[i].tolist(), 2)
        for i in range(len(w)) if kept[i]) / w[kept].sum().item()
    gaps = []
    for prior in (1e-2, 1e-4, 1e-6):
        per_location = make_loss(kind, [prior, prior], risk_scale='per_location')
        value = call(per_location, kind, logits, labels, w, quality).item()
        gaps.append(abs(value - all_background))
        per_positive = call(make_loss(kind, [prior, prior]), kind, logits, labels, w,
                            quality).item()
        assert per_positive * 2 * prior == pytest.approx(value, rel=1e-5)
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 1e-5 * all_background


@pytest.mark.parametrize('kind', ['focal', 'quality'])
@pytest.mark.parametrize('estimator', ['union', 'unlabeled'])
@pytest.mark.parametrize('nonnegative', ['clamp', 'nnpu'])
@pytest.mark.parametrize('case', ['no_labeled', 'all_labeled', 'all_ignored'])
def test_degenerate_batches_are_finite(kind, estimator, nonnegative, case):
    logits, labels, w, quality = random_batch(3, seed=7)
    if case == 'no_labeled':
        labels = torch.full_like(labels, 3)
    elif case == 'all_labeled':
        labels = labels % 3
        quality = torch.rand(len(labels))
    else:
        w = torch.zeros_like(w)
    logits = (logits * 20).requires_grad_(True)  # confident: |logit| up to ~100
    loss = make_loss(kind, [0.01, 0.02, 0.03], estimator=estimator,
                     nonnegative=nonnegative)
    value = call(loss, kind, logits, labels, w, quality)
    grad, = torch.autograd.grad(value, logits)
    assert torch.isfinite(value) and torch.isfinite(grad).all()
    if case == 'no_labeled':  # the mean background loss, per expected positive
        h_bg = [location_loss(kind, row, 3) for row in logits.tolist()]
        expected = sum(wi * h for wi, h in zip(w.tolist(), h_bg)) / w.sum().item() / 0.06
        assert value.item() == pytest.approx(expected, rel=1e-5)
    if case == 'all_ignored':
        assert value.item() == 0 and torch.all(grad == 0)


@pytest.mark.parametrize('kind', ['focal', 'quality'])
def test_ignored_locations_have_no_effect(kind):
    logits, labels, w, quality = random_batch(2, seed=8)
    keep = w > 0
    logits.requires_grad_(True)
    loss = make_loss(kind, [0.05, 0.02])
    full = call(loss, kind, logits, labels, w, quality)
    full.backward()
    assert torch.all(logits.grad[~keep] == 0)
    subset = call(loss, kind, logits[keep], labels[keep], w[keep], quality[keep])
    assert full.item() == pytest.approx(subset.item(), rel=1e-6)


def test_absent_class_contributes_nothing():
    logits, labels, w, quality = random_batch(3, seed=9)
    labels[labels == 1] = 3
    for kind in ('focal', 'quality'):
        value = call(make_loss(kind, [0.02, 0.01, 0.03]), kind, logits, labels, w,
                     quality)
        other = call(make_loss(kind, [0.02, 0.2, 0.03], risk_scale='per_location'),
                     kind, logits, labels, w, quality)
        assert value.item() * 0.06 == pytest.approx(other.item(), rel=1e-5)


@pytest.mark.parametrize('kind', ['focal', 'quality'])
def test_gradcheck(kind):
    logits, labels, w, quality = random_batch(2, seed=10, num=14)
    loss = make_loss(kind, [0.1, 0.1])
    logits = logits.double().requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda x: call(loss, kind, x, labels, w.double(), quality.double()), (logits,))


def test_nnpu_step_reports_value_and_ascends_negative_risk():
    gen = torch.Generator().manual_seed(11)
    labels = torch.tensor([0] * 10 + [1] * 10)
    logits = (torch.where(labels == 0, 4.0, -4.0)[:, None]
              + 0.5 * torch.randn(20, 1, generator=gen)).double().requires_grad_(True)
    w = torch.ones(20, dtype=torch.float64)
    quality = torch.zeros(20, dtype=torch.float64)
    positive_risk, negative_risk = reference_risks('focal', logits.detach(), labels, w,
                                                   quality, [0.7])
    assert negative_risk < -0.01
    loss = FocalPULoss(prior=0.7, gamma=GAMMA, alpha=ALPHA, nonnegative='nnpu',
                       nnpu_beta=0.01, nnpu_gamma=0.5)
    value = loss(logits, labels, w)
    assert value.item() == pytest.approx((positive_risk - 0.01) / 0.7, rel=1e-6)
    grad, = torch.autograd.grad(value, logits)
    # the gradient of -nnpu_gamma * r / pi, r from the focal terms in torch
    from mmdet_pu.models.losses import focal_terms
    _, h_bg = focal_terms(logits, labels, GAMMA, ALPHA)
    r = h_bg.mean() - 0.7 * h_bg[labels == 0].mean()
    expected, = torch.autograd.grad(-0.5 * r / 0.7, logits)
    torch.testing.assert_close(grad, expected)


def test_fp16_is_evaluated_in_float32():
    logits, labels, w, quality = random_batch(2, seed=12)
    half = logits.half().requires_grad_(True)
    for kind in ('focal', 'quality'):
        loss = make_loss(kind, [0.05, 0.02])
        value = call(loss, kind, half, labels, w.half(), quality.half())
        assert value.dtype == torch.float32
        expected = call(loss, kind, half.detach().float(), labels, w.half().float(),
                        quality.half().float())
        assert value.item() == pytest.approx(expected.item(), rel=1e-5)
        grad, = torch.autograd.grad(value, half)
        assert grad.dtype == torch.float16 and torch.isfinite(grad).all()


def test_avg_factor_is_ignored_and_loss_weight_scales():
    logits, labels, w, _ = random_batch(1, seed=13)
    base = FocalPULoss(prior=0.05)(logits, labels, w)
    assert FocalPULoss(prior=0.05)(logits, labels, w, avg_factor=7.0).item() == base.item()
    scaled = FocalPULoss(prior=0.05, loss_weight=2.5)(logits, labels, w)
    assert scaled.item() == pytest.approx(2.5 * base.item(), rel=1e-6)
    with pytest.raises(ValueError, match="only supports the 'mean' reduction"):
        FocalPULoss(prior=0.05)(logits, labels, w, reduction_override='sum')


@pytest.mark.parametrize('loss_type,mmdet_loss', [
    ('FocalPULoss', dict(type='FocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25,
                         loss_weight=1.0)),
    ('QualityFocalPULoss', dict(type='QualityFocalLoss', use_sigmoid=True, beta=2.0,
                                loss_weight=1.0)),
])
def test_merges_into_mmdet_loss_configs(loss_type, mmdet_loss):
    """Overriding type and prior of mmdet's loss dict keeps its own parameters."""
    cfg = Config(dict(model=dict(bbox_head=dict(loss_cls=mmdet_loss))))
    cfg.merge_from_dict({'model.bbox_head.loss_cls.type': loss_type,
                         'model.bbox_head.loss_cls.prior': 0.004})
    loss = MODELS.build(cfg.model.bbox_head.loss_cls)
    assert type(loss).__name__ == loss_type
    assert loss.prior.item() == pytest.approx(0.004)
    assert loss.nnpu_gamma == 1.0 and loss.nonnegative == 'clamp'
    if loss_type == 'FocalPULoss':
        assert (loss.gamma, loss.alpha) == (2.0, 0.25)
    else:
        assert loss.beta == 2.0


def test_priors_round_trip_through_the_state_dict():
    loss = QualityFocalPULoss(priors=[0.01, 0.02])
    loss.priors.copy_(torch.tensor([0.03, 0.005]))
    fresh = QualityFocalPULoss(priors=[0.01, 0.02])
    fresh.load_state_dict(loss.state_dict())
    assert fresh.priors.tolist() == pytest.approx([0.03, 0.005])
    one = FocalPULoss(prior=0.01)
    one.prior.fill_(0.002)
    restored = FocalPULoss(prior=0.01)
    restored.load_state_dict(one.state_dict())
    assert restored.prior.item() == pytest.approx(0.002)


@pytest.mark.parametrize('kwargs,match', [
    (dict(), r'loss_cls\.prior / loss_cls\.priors \(FocalPULoss\): expected exactly one'),
    (dict(prior=0.1, priors=[0.1]), r'expected exactly one'),
    (dict(prior=0.0), r'loss_cls\.prior \(FocalPULoss\): expected a class prior'),
    (dict(prior=True), r'loss_cls\.prior \(FocalPULoss\): expected a class prior'),
    (dict(priors=[0.6, 0.5]), r'loss_cls\.priors \(FocalPULoss\): expected sum'),
    (dict(priors=[0.1, -0.1]), r'loss_cls\.priors \(FocalPULoss\)\[1\]'),
    (dict(priors=0.1), r'loss_cls\.priors \(FocalPULoss\): expected a list'),
    (dict(prior=0.1, use_sigmoid=False), r'loss_cls\.use_sigmoid'),
    (dict(prior=0.1, estimator='positive'), r'loss_cls\.estimator'),
    (dict(prior=0.1, nonnegative='relu'), r'loss_cls\.nonnegative'),
    (dict(prior=0.1, nnpu_beta=0.1),
     r"loss_cls\.nnpu_beta / loss_cls\.nnpu_gamma: only used with nonnegative='nnpu'"),
    (dict(prior=0.1, nonnegative='nnpu', nnpu_beta=-1.0), r'loss_cls\.nnpu_beta'),
    (dict(prior=0.1, nonnegative='nnpu', nnpu_gamma=0.0), r'loss_cls\.nnpu_gamma'),
    (dict(prior=0.1, risk_scale='sum'), r'loss_cls\.risk_scale'),
    (dict(prior=0.1, per_level=1), r'loss_cls\.per_level: expected True or False'),
    (dict(prior=0.1, per_level=True, nonnegative='nnpu'),
     r"loss_cls\.per_level: the bracket per level takes nonnegative='clamp'"),
    (dict(prior=0.1, gamma=-1.0), r'loss_cls\.gamma: expected the focal gamma'),
    (dict(prior=0.1, alpha=1.5), r'loss_cls\.alpha'),
])
def test_invalid_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MODELS.build(dict(type='FocalPULoss', **kwargs))


def test_invalid_quality_beta():
    with pytest.raises(ValueError, match=r'loss_cls\.beta: expected the quality focal'):
        QualityFocalPULoss(prior=0.1, beta=-2.0)


def test_shapes_and_targets_are_checked():
    logits, labels, w, quality = random_batch(2, seed=14)
    with pytest.raises(ValueError, match=r'expected cls_score of shape \(N, 3\)'):
        FocalPULoss(priors=[0.1, 0.1, 0.1])(logits, labels, w)
    with pytest.raises(ValueError, match=r'take QualityFocalPULoss'):
        FocalPULoss(priors=[0.1, 0.1])(logits, (labels, quality), w)
    with pytest.raises(ValueError, match=r'take FocalPULoss'):
        QualityFocalPULoss(priors=[0.1, 0.1])(logits, labels, w)
    with pytest.raises(ValueError, match=r'expected 60 labels'):
        FocalPULoss(priors=[0.1, 0.1])(logits, labels[:10], w)
    with pytest.raises(ValueError, match=r'expected 60 group indices'):
        FocalPULoss(priors=[0.1, 0.1], per_level=True)(
            logits, labels, w, groups=labels[:10], num_groups=3)
