"""Tests of FactorizedMultiPULoss: Eq. 15 with p_bg = sigmoid(b), p_m = (1 - p_bg) q_m."""
import pytest
import torch
from mmengine.config import ConfigDict

from mmdet.registry import MODELS
import mmdet_pu  # noqa: F401  (registers the losses)
from mmdet_pu.models.losses import (FactorizedMultiPULoss, MultiPULoss,
                                    background_cross_entropy)
from tests.models.test_pu_loss import bbox_head_cfg, random_batch

PRIORS = [0.2, 0.1, 0.05]


def reference_loss(logits, labels, weights, priors):
    """Eq. 15 written out sample by sample with the factorized probabilities."""
    num_classes = len(priors)

    def probability(i, cls):
        p_bg = 1 / (1 + torch.exp(-logits[i, -1]))
        if cls == num_classes:
            return p_bg
        return (1 - p_bg) * torch.softmax(logits[i, :-1], dim=0)[cls]

    positive, positive_bg = logits.new_zeros(()), logits.new_zeros(())
    for m in range(num_classes):
        members = [i for i in range(len(labels)) if labels[i] == m and weights[i] > 0]
        n_pm = sum(weights[i] for i in members)
        for i in members:
            positive = positive - priors[m] / n_pm * weights[i] * \
                torch.log(probability(i, m))
            positive_bg = positive_bg - priors[m] / n_pm * weights[i] * \
                torch.log(probability(i, num_classes))
    pool = [i for i in range(len(labels)) if weights[i] > 0]
    total = sum(weights[i] for i in pool)
    marginal = sum(-weights[i] * torch.log(probability(i, num_classes)) / total
                   for i in pool)
    return positive + torch.clamp(marginal - positive_bg, min=0)


@pytest.mark.parametrize('seed', [0, 1, 2])
@pytest.mark.parametrize('weights', ['ones', 'random'])
def test_matches_reference(seed, weights):
    logits, labels, w = random_batch(3, False, seed, weights=weights)
    expected = reference_loss(logits.double(), labels.tolist(), w.tolist(), PRIORS)
    actual = FactorizedMultiPULoss(PRIORS)(logits, labels, w)
    assert actual.dtype == torch.float32 and actual.dim() == 0
    assert actual.item() == pytest.approx(expected.item(), rel=1e-5, abs=1e-6)


def test_background_term_reaches_only_the_background_logit():
    """Unlabeled samples pushed to the background leave the class logits alone; with
    the softmax MultiPULoss they lower every class logit."""
    logits = torch.randn(6, 4, requires_grad=True)
    unlabeled = torch.full((6, ), 3)
    FactorizedMultiPULoss(PRIORS)(logits, unlabeled).backward()
    assert torch.count_nonzero(logits.grad[:, :-1]) == 0
    assert torch.all(logits.grad[:, -1] < 0)  # towards p_bg = 1
    softmax_logits = logits.detach().clone().requires_grad_()
    MultiPULoss(PRIORS)(softmax_logits, unlabeled).backward()
    assert torch.all(softmax_logits.grad[:, :-1] > 0)


def test_class_posterior_learns_from_labeled_cells_at_their_priors():
    """The class logits of a labeled cell of class m get pi_m / N_p^m times the
    gradient of its class cross entropy; the unlabeled ones get none."""
    logits = torch.zeros(5, 4, requires_grad=True)
    labels = torch.tensor([0, 0, 1, 3, 3])
    FactorizedMultiPULoss(PRIORS)(logits, labels).backward()
    grad = logits.grad[:, :-1]
    # q uniform: d H(q, m) / d z = q - onehot(m) = 1/3 - [m == k]
    onehot = torch.eye(3)[labels[:3]]
    scale = torch.tensor([0.2 / 2, 0.2 / 2, 0.1 / 1]).reshape(-1, 1)
    torch.testing.assert_close(grad[:3], scale * (1 / 3 - onehot))
    assert torch.count_nonzero(grad[3:]) == 0


def test_extreme_logits_stay_finite():
    logits, labels, w = random_batch(3, False, seed=4, scale=1e4)
    logits.requires_grad_()
    loss = FactorizedMultiPULoss(PRIORS)(logits, labels, w)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(logits.grad).all()


def test_bbox_head_predicts_the_factorized_probabilities():
    head = MODELS.build(bbox_head_cfg(3, dict(type='FactorizedMultiPULoss',
                                              priors=PRIORS)))
    assert head.fc_cls.out_features == 4
    cls_score = torch.tensor([[2.0, 0.0, -1.0, -3.0],  # a cell, most likely class 0
                              [0.0, 3.0, 0.0, 4.0],  # background
                              [0.0, 0.0, 1.0, 0.0]])
    probs = head.loss_cls.get_activation(cls_score)
    p_cell = torch.sigmoid(-cls_score[:, -1:])
    torch.testing.assert_close(probs[:, :-1], p_cell * torch.softmax(cls_score[:, :-1], 1))
    torch.testing.assert_close(probs.sum(1), torch.ones(3))
    rois = torch.tensor([[0, 10, 10, 40, 40], [0, 50, 20, 90, 70],
                         [0, 5, 60, 30, 100]], dtype=torch.float32)
    bbox_pred = torch.zeros(3, 12)
    meta = dict(img_shape=(128, 128), scale_factor=(1.0, 1.0))
    test_cfg = ConfigDict(score_thr=0.0, nms=dict(type='nms', iou_threshold=0.3),
                          max_per_img=100)
    result = head.predict_by_feat((rois, ), (cls_score, ), (bbox_pred, ), [meta],
                                  rcnn_test_cfg=test_cfg)[0]
    top = result.scores.argmax()
    assert result.labels[top] == 0 and result.scores[top] == pytest.approx(
        probs[0, 0].item())
    labels = torch.tensor([0, 3, 1])  # right, right (background), wrong
    targets = (labels, torch.ones(3), torch.zeros(3, 4), torch.zeros(3, 4))
    losses = head.loss(cls_score, bbox_pred, rois, *targets)
    assert set(losses) == {'loss_cls', 'acc', 'loss_bbox'}
    assert losses['acc'].item() == pytest.approx(200 / 3)


def test_prior_count_is_checked_when_the_bbox_head_is_built():
    with pytest.raises(ValueError, match=r'loss_cls\.priors: expected 2 values'):
        MODELS.build(bbox_head_cfg(2, dict(type='FactorizedMultiPULoss',
                                           priors=PRIORS)))


def test_background_cross_entropy_of_either_head():
    """What the box-fit negatives, soft targets and prior estimators read: -log p_bg."""
    scores = torch.randn(5, 4)
    factorized = FactorizedMultiPULoss(PRIORS)
    torch.testing.assert_close(background_cross_entropy(scores, factorized),
                               -torch.log(factorized.get_activation(scores)[:, -1]))
    torch.testing.assert_close(background_cross_entropy(scores, MultiPULoss(PRIORS)),
                               -torch.log_softmax(scores, dim=1)[:, -1])
