"""The background recalibration loss (the RetinaNet peer baseline): its formula on
hand-made logits, mmdet's FocalLoss without recalibration, finite gradients."""
import math

import pytest
import torch

from mmdet.models.losses import FocalLoss
from mmdet.registry import MODELS
from mmdet_pu.models.losses import BackgroundRecalibrationLoss

LOGITS = torch.tensor([[2.0, -1.0], [1.5, 0.3], [-3.0, 0.0]])
LABELS = torch.tensor([0, 2, 1])  # class 0, background, class 1


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


def hand_loss(thr, gamma=2.0, alpha=0.25):
    total = 0.0
    for row, label in zip(LOGITS.tolist(), LABELS.tolist()):
        for channel, x in enumerate(row):
            p = sigmoid(x)
            if channel == label:  # the focal positive branch
                total += -alpha * (1 - p) ** gamma * math.log(p)
            elif 1 - p < thr:  # a confident "object" on a background channel: mirrored
                total += -(1 - alpha) * (1 - p) ** gamma * math.log(p)
            else:
                total += -(1 - alpha) * p ** gamma * math.log(1 - p)
    return total


def test_loss_is_its_formula_on_hand_made_logits():
    # with thr 0.25 only channel 0 of the background row (p = 0.818 > 0.75) is mirrored
    loss = BackgroundRecalibrationLoss(confusion_thr=0.25, reduction='sum')
    assert loss(LOGITS, LABELS).item() == pytest.approx(hand_loss(0.25), rel=1e-6)
    assert hand_loss(0.25) != pytest.approx(hand_loss(0.0))
    mean = BackgroundRecalibrationLoss(confusion_thr=0.25, loss_weight=2.0)
    assert mean(LOGITS, LABELS, avg_factor=4).item() == pytest.approx(
        2 * hand_loss(0.25) / 4, rel=1e-6)


def test_without_recalibration_it_is_mmdets_focal_loss():
    weight = torch.tensor([1.0, 0.0, 1.0])
    ours = BackgroundRecalibrationLoss(confusion_thr=0.0)(LOGITS, LABELS, weight,
                                                          avg_factor=2)
    theirs = FocalLoss(use_sigmoid=True)(LOGITS, LABELS, weight, avg_factor=2)
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-6)


def test_a_confused_background_channel_is_pulled_towards_the_object():
    logits = torch.tensor([[3.0]], requires_grad=True)  # p = 0.95 on a background
    BackgroundRecalibrationLoss(confusion_thr=0.25)(logits, torch.tensor([1])).backward()
    assert logits.grad.item() < 0  # descent raises the score
    logits.grad = None
    FocalLoss(use_sigmoid=True)(logits, torch.tensor([1])).backward()
    assert logits.grad.item() > 0  # the focal loss lowers it


def test_finite_for_extreme_logits_and_registered():
    logits = torch.tensor([[80.0, -80.0], [-80.0, 80.0]], requires_grad=True)
    loss = MODELS.build(dict(type='BackgroundRecalibrationLoss'))
    value = loss(logits, torch.tensor([2, 0]))
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(logits.grad).all()
    with pytest.raises(ValueError, match='confusion_thr must be in'):
        BackgroundRecalibrationLoss(confusion_thr=1.0)
    with pytest.raises(ValueError, match='use_sigmoid must be True'):
        BackgroundRecalibrationLoss(use_sigmoid=False)
