"""Tests of PULoss / MultiPULoss against the paper's equations (Section 2.2)."""
import math

import pytest
import torch
from mmengine.config import ConfigDict

from mmdet.registry import MODELS
import mmdet_pu  # noqa: F401  (registers the losses)
from mmdet_pu.models.losses import MultiPULoss, PULoss


def reference_risks(logits, labels, weights, priors, use_sigmoid, estimator):
    """Positive risk and bracket r of L_cls^pu / L_cls^mpu, written out sample by sample.

    Section 2.2.1 / 2.2.2: with positives P_m of class m and unlabeled U,
      R_p = sum_m pi_m / N_p^m sum_{i in P_m} w_i H(c_i, m)
      r   = E_x[H(c, bg)] - sum_m pi_m / N_p^m sum_{i in P_m} w_i H(c_i, bg)
    where E_x is the weighted mean over U ∪ P ('union') or over U ('unlabeled').
    Returns torch scalars (differentiable w.r.t. ``logits``).
    """
    num_classes = len(priors)
    num = logits.shape[0]

    def cross_entropy(i, cls):
        if use_sigmoid:
            p = torch.sigmoid(logits[i, 0])
            return -torch.log(p) if cls == 0 else -torch.log(1 - p)
        return -torch.log(torch.softmax(logits[i], dim=0)[cls])

    positive_risk = logits.new_zeros(())
    positive_bg = logits.new_zeros(())
    for m in range(num_classes):
        members = [i for i in range(num) if labels[i] == m and weights[i] > 0]
        if not members:
            continue
        n_pm = sum(weights[i] for i in members)
        for i in members:
            positive_risk = positive_risk + priors[m] / n_pm * weights[i] * \
                cross_entropy(i, m)
            positive_bg = positive_bg + priors[m] / n_pm * weights[i] * \
                cross_entropy(i, num_classes)
    pool = [i for i in range(num) if weights[i] > 0 and (
        estimator == 'union' or labels[i] == num_classes)]
    marginal = logits.new_zeros(())
    if pool:
        total = sum(weights[i] for i in pool)
        for i in pool:
            marginal = marginal + weights[i] * cross_entropy(i, num_classes) / total
    return positive_risk, marginal - positive_bg


def reference_loss(*args):
    positive_risk, negative_risk = reference_risks(*args)
    return positive_risk + torch.clamp(negative_risk, min=0)


def random_batch(num_classes, use_sigmoid, seed, num=40, weights='random',
                 scale=2.0):
    gen = torch.Generator().manual_seed(seed)
    channels = 1 if use_sigmoid else num_classes + 1
    logits = torch.randn(num, channels, generator=gen) * scale
    labels = torch.randint(0, num_classes + 1, (num,), generator=gen)
    if weights == 'random':
        w = torch.rand(num, generator=gen)
        w[torch.rand(num, generator=gen) < 0.2] = 0  # ignored samples
    else:
        w = torch.ones(num)
    return logits, labels, w


def make_loss(num_classes, use_sigmoid, priors, **kwargs):
    if num_classes == 1 and not kwargs.pop('multi', False):
        return PULoss(priors[0], use_sigmoid=use_sigmoid, **kwargs)
    return MultiPULoss(priors, **kwargs)


CASES = [  # (num_classes, use_sigmoid, priors)
    (1, True, [0.3]),
    (1, False, [0.3]),
    (3, False, [0.25, 0.15, 0.1]),
]


@pytest.mark.parametrize('num_classes,use_sigmoid,priors', CASES)
@pytest.mark.parametrize('estimator', ['union', 'unlabeled'])
@pytest.mark.parametrize('weights', ['ones', 'random'])
@pytest.mark.parametrize('seed', [0, 1, 2])
def test_matches_reference(num_classes, use_sigmoid, priors, estimator, weights,
                           seed):
    logits, labels, w = random_batch(num_classes, use_sigmoid, seed, weights=weights)
    loss = make_loss(num_classes, use_sigmoid, priors, estimator=estimator)
    expected = reference_loss(logits.double(), labels.tolist(), w.tolist(), priors,
                              use_sigmoid, estimator)
    actual = loss(logits, labels, w)
    assert actual.dtype == torch.float32 and actual.dim() == 0
    assert actual.item() == pytest.approx(expected.item(), rel=1e-5, abs=1e-6)


def test_hand_computed_binary_example():
    # sigmoid probabilities: P = {0.75, 0.5}, U = {0.25, 0.75}; pi = 0.2
    ln3 = math.log(3)
    logits = torch.tensor([[ln3], [0.0], [-ln3], [ln3]])
    labels = torch.tensor([0, 0, 1, 1])
    # R_p = 0.1 (ln 4/3 + ln 2); E_x[H(c,0)] = (ln 4 + ln 2 + ln 4/3 + ln 4) / 4;
    # pi E_P[H(c,0)] = 0.1 (ln 4 + ln 2)  ->  L = ln(128/3) / 4 - 0.1 ln 3
    union = PULoss(0.2, use_sigmoid=True)(logits, labels)
    assert union.item() == pytest.approx(math.log(128 / 3) / 4 - 0.1 * ln3, rel=1e-6)
    # naive: E_U[H(c,0)] = (ln 4/3 + ln 4) / 2  ->  L = ln(16/3) / 2 - 0.1 ln 3
    naive = PULoss(0.2, use_sigmoid=True, estimator='unlabeled')(logits, labels)
    assert naive.item() == pytest.approx(math.log(16 / 3) / 2 - 0.1 * ln3, rel=1e-6)
    # pi = 0.95: the bracket is negative and clamped, L = R_p = 0.475 ln(8/3)
    clamped = PULoss(0.95, use_sigmoid=True)(logits, labels)
    assert clamped.item() == pytest.approx(0.475 * math.log(8 / 3), rel=1e-6)


def test_softmax_binary_equals_sigmoid_on_logit_difference():
    logits, labels, w = random_batch(1, False, seed=3)
    softmax = PULoss(0.3)(logits, labels, w)
    sigmoid = PULoss(0.3, use_sigmoid=True)(
        logits[:, :1] - logits[:, 1:], labels, w)
    assert softmax.item() == pytest.approx(sigmoid.item(), rel=1e-5)


def test_multi_with_one_class_equals_binary():
    logits, labels, w = random_batch(1, False, seed=4)
    binary = PULoss(0.3)(logits, labels, w)
    multi = MultiPULoss([0.3])(logits, labels, w)
    assert multi.item() == pytest.approx(binary.item(), rel=1e-6)


@pytest.mark.parametrize('num_classes,use_sigmoid,priors', CASES)
def test_no_positives_is_weighted_mean_over_unlabeled(num_classes, use_sigmoid,
                                                      priors):
    logits, _, w = random_batch(num_classes, use_sigmoid, seed=5)
    labels = torch.full((len(w),), num_classes)
    for estimator in ('union', 'unlabeled'):
        loss = make_loss(num_classes, use_sigmoid, priors, estimator=estimator)
        if use_sigmoid:
            h_bg = torch.nn.functional.softplus(logits[:, 0])
        else:
            h_bg = -torch.log_softmax(logits, dim=1)[:, -1]
        expected = (w * h_bg).sum() / w.sum()
        assert loss(logits, labels, w).item() == pytest.approx(expected.item(),
                                                               rel=1e-6)


@pytest.mark.parametrize('num_classes,use_sigmoid,priors', CASES)
def test_no_unlabeled(num_classes, use_sigmoid, priors):
    logits, labels, w = random_batch(num_classes, use_sigmoid, seed=6)
    labels = labels % num_classes
    union = make_loss(num_classes, use_sigmoid, priors)(logits, labels, w)
    expected = reference_loss(logits.double(), labels.tolist(), w.tolist(), priors,
                              use_sigmoid, 'union')
    assert union.item() == pytest.approx(expected.item(), rel=1e-5)
    # the naive estimate of E_x[H(c,0)] is empty (0): the clamp leaves R_p
    naive = make_loss(num_classes, use_sigmoid, priors, estimator='unlabeled')
    positive_risk, _ = reference_risks(logits.double(), labels.tolist(), w.tolist(),
                                       priors, use_sigmoid, 'unlabeled')
    assert naive(logits, labels, w).item() == pytest.approx(positive_risk.item(),
                                                            rel=1e-5)


def test_absent_class_contributes_nothing():
    priors = [0.25, 0.15, 0.1]
    logits, labels, w = random_batch(3, False, seed=7)
    labels[labels == 1] = 3  # class 1 absent from the batch
    loss = MultiPULoss(priors)(logits, labels, w)
    expected = reference_loss(logits.double(), labels.tolist(), w.tolist(), priors,
                              False, 'union')
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    # the absent class's prior does not enter the loss
    other_prior = MultiPULoss([0.25, 0.4, 0.1])(logits, labels, w)
    assert other_prior.item() == pytest.approx(loss.item(), rel=1e-6)


@pytest.mark.parametrize('num_classes,use_sigmoid,priors', CASES)
def test_ignored_samples_have_no_effect(num_classes, use_sigmoid, priors):
    logits, labels, w = random_batch(num_classes, use_sigmoid, seed=8)
    keep = w > 0
    assert (~keep).any()
    loss = make_loss(num_classes, use_sigmoid, priors)
    logits.requires_grad_(True)
    full = loss(logits, labels, w)
    full.backward()
    assert torch.all(logits.grad[~keep] == 0)
    subset = loss(logits[keep], labels[keep], w[keep])
    assert full.item() == pytest.approx(subset.item(), rel=1e-6)


def test_all_ignored_gives_zero_with_gradient_graph():
    logits = torch.randn(6, 4, requires_grad=True)
    loss = MultiPULoss([0.2, 0.2, 0.2])(logits, torch.tensor([0, 1, 2, 3, 3, 3]),
                                        torch.zeros(6))
    loss.backward()
    assert loss.item() == 0 and torch.all(logits.grad == 0)


def test_avg_factor_is_ignored_and_loss_weight_scales():
    logits, labels, w = random_batch(1, True, seed=9)
    loss = PULoss(0.3, use_sigmoid=True)
    base = loss(logits, labels, w)
    assert loss(logits, labels, w, avg_factor=17.0).item() == base.item()
    assert loss(logits, labels, w, reduction_override='mean').item() == base.item()
    scaled = PULoss(0.3, use_sigmoid=True, loss_weight=2.5)(logits, labels, w)
    assert scaled.item() == pytest.approx(2.5 * base.item(), rel=1e-6)


@pytest.mark.parametrize('reduction', ['none', 'sum'])
def test_other_reductions_are_rejected(reduction):
    logits, labels, w = random_batch(1, True, seed=9)
    with pytest.raises(ValueError, match="only supports the 'mean' reduction"):
        PULoss(0.3, use_sigmoid=True)(logits, labels, w, reduction_override=reduction)


@pytest.mark.parametrize('num_classes,use_sigmoid,priors', CASES)
def test_fp16_input_is_computed_in_float32(num_classes, use_sigmoid, priors):
    logits, labels, w = random_batch(num_classes, use_sigmoid, seed=10)
    half = logits.half().requires_grad_(True)
    loss = make_loss(num_classes, use_sigmoid, priors)
    value = loss(half, labels, w.half())
    assert value.dtype == torch.float32
    expected = loss(half.detach().float(), labels, w.half().float())
    assert value.item() == pytest.approx(expected.item(), rel=1e-6)
    value.backward()
    assert half.grad.dtype == torch.float16 and torch.isfinite(half.grad).all()


@pytest.mark.parametrize('num_classes,use_sigmoid,priors', CASES)
@pytest.mark.parametrize('nonnegative', ['clamp', 'nnpu'])
def test_extreme_logits_stay_finite(num_classes, use_sigmoid, priors, nonnegative):
    logits, labels, w = random_batch(num_classes, use_sigmoid, seed=11)
    extreme = (torch.sign(logits) * 80).requires_grad_(True)
    for estimator in ('union', 'unlabeled'):
        loss = make_loss(num_classes, use_sigmoid, priors, estimator=estimator,
                         nonnegative=nonnegative)
        value = loss(extreme, labels, w)
        grad, = torch.autograd.grad(value, extreme)
        assert torch.isfinite(value) and torch.isfinite(grad).all()
        assert value.item() > 0  # wrong confident predictions cost ~80


HIGH_PRIORS = {1: [0.9], 3: [0.4, 0.3, 0.25]}  # mostly a negative bracket (clamped)


@pytest.mark.parametrize('num_classes,use_sigmoid,priors', CASES)
@pytest.mark.parametrize('estimator', ['union', 'unlabeled'])
@pytest.mark.parametrize('high_priors', [False, True])
def test_gradcheck(num_classes, use_sigmoid, priors, estimator, high_priors):
    if high_priors:
        priors = HIGH_PRIORS[num_classes]
    logits, labels, w = random_batch(num_classes, use_sigmoid, seed=12, num=12)
    loss = make_loss(num_classes, use_sigmoid, priors, estimator=estimator)
    logits = logits.double().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: loss(x, labels, w.double()), (logits,))


def overfitting_batch(seed):
    """Confident positives and confident unlabeled: with pi = 0.7 the bracket r < 0."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.tensor([0] * 10 + [1] * 10)
    logits = torch.where(labels == 0, 5.0, -5.0)[:, None] + \
        0.5 * torch.randn(20, 1, generator=gen)
    return logits.double(), labels, torch.ones(20, dtype=torch.float64)


@pytest.mark.parametrize('beta,gamma', [(0.0, 1.0), (0.1, 0.5)])
def test_nnpu_step_reports_value_and_ascends_negative_risk(beta, gamma):
    logits, labels, w = overfitting_batch(seed=13)
    logits.requires_grad_(True)
    positive_risk, negative_risk = reference_risks(
        logits, labels.tolist(), w.tolist(), [0.7], True, 'union')
    assert negative_risk.item() < -beta
    loss = PULoss(0.7, use_sigmoid=True, nonnegative='nnpu', beta=beta, gamma=gamma)
    value = loss(logits, labels, w)
    # rel=1e-6 below: the prior is held in a float32 buffer
    assert value.item() == pytest.approx(positive_risk.item() - beta, rel=1e-6)
    grad, = torch.autograd.grad(value, logits)
    expected, = torch.autograd.grad(-gamma * negative_risk, logits)
    torch.testing.assert_close(grad, expected)
    # the clamp keeps R_p as value and gradient
    clamp = PULoss(0.7, use_sigmoid=True)(logits, labels, w)
    clamp_grad, = torch.autograd.grad(clamp, logits)
    positive_grad, = torch.autograd.grad(positive_risk, logits)
    assert clamp.item() == pytest.approx(positive_risk.item(), rel=1e-6)
    torch.testing.assert_close(clamp_grad, positive_grad)


def test_nnpu_without_overfitting_is_the_unclamped_risk():
    logits, labels, w = overfitting_batch(seed=14)
    logits.requires_grad_(True)
    positive_risk, negative_risk = reference_risks(
        logits, labels.tolist(), w.tolist(), [0.7], True, 'union')
    beta = -negative_risk.item() + 0.05  # r >= -beta: plain R_p + r, even though r < 0
    value = PULoss(0.7, use_sigmoid=True, nonnegative='nnpu', beta=beta)(
        logits, labels, w)
    assert value.item() == pytest.approx((positive_risk + negative_risk).item(),
                                         rel=1e-6)
    assert torch.autograd.gradcheck(
        lambda x: PULoss(0.7, use_sigmoid=True, nonnegative='nnpu', beta=beta)(
            x, labels, w), (logits,))


@pytest.mark.parametrize('prior', [0, 1, -0.1, 1.5, '0.1', True, None, float('nan')])
def test_invalid_prior(prior):
    with pytest.raises(ValueError, match=r'loss_cls\.prior \(PULoss\): expected a '
                                         r'class prior with 0 < prior < 1'):
        MODELS.build(dict(type='PULoss', prior=prior))


@pytest.mark.parametrize('priors,match', [
    ([0.5, 0.5], r'loss_cls\.priors \(MultiPULoss\): expected sum\(priors\) < 1'),
    ([0.2, 1.2], r'loss_cls\.priors \(MultiPULoss\)\[1\]: expected a class prior'),
    ([], r'loss_cls\.priors \(MultiPULoss\): expected a list'),
    (0.2, r'loss_cls\.priors \(MultiPULoss\): expected a list'),
])
def test_invalid_priors(priors, match):
    with pytest.raises(ValueError, match=match):
        MODELS.build(dict(type='MultiPULoss', priors=priors))


@pytest.mark.parametrize('kwargs,match', [
    (dict(estimator='positive'), r'loss_cls\.estimator'),
    (dict(nonnegative='relu'), r'loss_cls\.nonnegative'),
    (dict(beta=0.1), r"only used with nonnegative='nnpu'"),
    (dict(nonnegative='nnpu', beta=-1.0), r'loss_cls\.beta'),
    (dict(nonnegative='nnpu', gamma=0.0), r'loss_cls\.gamma'),
])
def test_invalid_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PULoss(0.1, **kwargs)


def bbox_head_cfg(num_classes, loss_cls):
    return ConfigDict(
        type='Shared2FCBBoxHead', in_channels=8, fc_out_channels=16, roi_feat_size=7,
        num_classes=num_classes,
        bbox_coder=dict(type='DeltaXYWHBBoxCoder', target_means=[0.0] * 4,
                        target_stds=[0.1, 0.1, 0.2, 0.2]),
        reg_class_agnostic=False, loss_cls=loss_cls,
        loss_bbox=dict(type='L1Loss', loss_weight=1.0))


def test_prior_count_is_checked_when_the_bbox_head_is_built():
    loss_cls = dict(type='MultiPULoss', priors=[0.2, 0.1])
    with pytest.raises(ValueError, match=r'model\.roi_head\.bbox_head\.loss_cls\.'
                                         r'priors: expected 3 values .* got 2'):
        MODELS.build(bbox_head_cfg(3, loss_cls))
    head = MODELS.build(bbox_head_cfg(2, loss_cls))
    assert head.fc_cls.out_features == 3


def test_channel_count_is_checked_at_forward():
    with pytest.raises(ValueError, match=r'expected cls_score of shape \(N, 3\)'):
        MultiPULoss([0.2, 0.1])(torch.randn(4, 5), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match=r'PULoss is binary, use MultiPULoss'):
        PULoss(0.2)(torch.randn(4, 4), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match=r'expected cls_score of shape \(N, 1\)'):
        PULoss(0.2, use_sigmoid=True)(torch.randn(4, 2),
                                      torch.zeros(4, dtype=torch.long))


@pytest.mark.parametrize('use_sigmoid,channels', [(True, 1), (False, 2)])
def test_rpn_head_reads_use_sigmoid(use_sigmoid, channels):
    head = MODELS.build(dict(
        type='PURPNHead', in_channels=8, feat_channels=8,
        anchor_generator=dict(type='AnchorGenerator', scales=[4], ratios=[1.0],
                              strides=[4, 8]),
        loss_cls=dict(type='PULoss', prior=0.1, use_sigmoid=use_sigmoid)))
    assert head.cls_out_channels == channels
    assert head.rpn_cls.out_channels == channels


def test_bbox_head_predictions_and_accuracy_as_with_cross_entropy():
    ce_head = MODELS.build(bbox_head_cfg(
        3, dict(type='CrossEntropyLoss', use_sigmoid=False)))
    pu_head = MODELS.build(bbox_head_cfg(3, dict(type='MultiPULoss',
                                                 priors=[0.2, 0.1, 0.1])))
    # a cross-entropy checkpoint lacks the priors buffer: load it with strict=False
    missing, unexpected = pu_head.load_state_dict(ce_head.state_dict(), strict=False)
    assert missing == ['loss_cls.priors'] and unexpected == []
    rois = torch.tensor([[0, 10, 10, 40, 40], [0, 50, 20, 90, 70],
                         [0, 5, 60, 30, 100]], dtype=torch.float32)
    cls_score = torch.randn(3, 4)
    bbox_pred = torch.randn(3, 12) * 0.1
    meta = dict(img_shape=(128, 128), scale_factor=(1.0, 1.0))
    test_cfg = ConfigDict(score_thr=0.0, nms=dict(type='nms', iou_threshold=0.3),
                          max_per_img=100)
    results = [head.predict_by_feat((rois,), (cls_score,), (bbox_pred,), [meta],
                                    rcnn_test_cfg=test_cfg)[0]
               for head in (ce_head, pu_head)]
    torch.testing.assert_close(results[0].scores, results[1].scores)
    torch.testing.assert_close(results[0].bboxes, results[1].bboxes)
    assert torch.equal(results[0].labels, results[1].labels)
    labels = torch.tensor([0, 2, 3])
    targets = (labels, torch.ones(3), torch.zeros(3, 4), torch.zeros(3, 4))
    losses = [head.loss(cls_score, bbox_pred, rois, *targets) for head in
              (ce_head, pu_head)]
    assert set(losses[0]) == set(losses[1]) == {'loss_cls', 'acc', 'loss_bbox'}
    assert losses[0]['acc'] == losses[1]['acc']


def test_priors_round_trip_through_the_state_dict():
    head = MODELS.build(bbox_head_cfg(3, dict(type='MultiPULoss',
                                              priors=[0.2, 0.1, 0.1])))
    logits, labels, w = random_batch(3, False, seed=15)
    before = head.loss_cls(logits, labels, w)
    head.loss_cls.priors.copy_(torch.tensor([0.3, 0.2, 0.05]))  # as a hook does
    after = head.loss_cls(logits, labels, w)
    assert after.item() != pytest.approx(before.item())
    state = head.state_dict()
    assert torch.equal(state['loss_cls.priors'], torch.tensor([0.3, 0.2, 0.05]))
    fresh = MODELS.build(bbox_head_cfg(3, dict(type='MultiPULoss',
                                               priors=[0.2, 0.1, 0.1])))
    fresh.load_state_dict(state)
    assert fresh.loss_cls(logits, labels, w).item() == after.item()

    binary = PULoss(0.1, use_sigmoid=True)
    binary.prior.fill_(0.25)
    restored = PULoss(0.1, use_sigmoid=True)
    restored.load_state_dict(binary.state_dict())
    assert restored.prior.item() == 0.25
