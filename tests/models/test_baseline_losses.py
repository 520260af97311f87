"""Weighted cross entropy and focal loss baselines (Appendix A) as their configs build them."""
import pytest
import torch
from mmengine.config import Config

import mmdet_pu  # noqa: F401
from mmdet.registry import MODELS
from tests._data import REPO


class Heads:
    """The RPN head and the box head of an experiment config's model."""

    def __init__(self, name):
        model = Config.fromfile(
            str(REPO / f'configs/baselines/mitos14_vgg16_keep1_{name}.py')).model
        self.rpn_head, self.bbox_head = model.rpn_head, model.roi_head.bbox_head


def method(name):
    return Heads(name)


def loss_cfg(head_cfg):
    """The head's ``loss_cls`` config."""
    return dict(head_cfg.loss_cls)


def build_loss(head_cfg):
    return MODELS.build(loss_cfg(head_cfg))


def h_wce(c, z, w):
    """Eq. (A1)."""
    return -w * z * torch.log(c) - (1 - z) * torch.log(1 - c)


def h_focal(c, z, alpha=0.25, gamma=2.):
    """Eq. (A2)."""
    return (-alpha * z * (1 - c) ** gamma * torch.log(c)
            - (1 - alpha) * (1 - z) * c ** gamma * torch.log(1 - c))


LOGITS = torch.tensor([2.0, -1.0, 0.3, -2.5, 1.2])
# mmdet labels: 0 = cell, 1 = background / unlabeled
LABELS = torch.tensor([0, 1, 1, 0, 1])
Z = (LABELS == 0).float()


def test_weighted_ce_uses_w_equal_one_over_prior_in_both_stages():
    cfg = method('weighted_ce')
    w = 1 / 0.04
    rpn_loss = build_loss(cfg.rpn_head)
    expected = h_wce(LOGITS.sigmoid(), Z, w).mean()
    assert rpn_loss(LOGITS[:, None], LABELS).item() == pytest.approx(expected.item())

    roi_loss = build_loss(cfg.bbox_head)
    # softmax over (cell, background) logits: c = sigmoid(l_cell - l_bg)
    two_logits = torch.stack([LOGITS, torch.zeros_like(LOGITS)], dim=1)
    assert roi_loss(two_logits, LABELS).item() == pytest.approx(expected.item())


def test_focal_matches_eq_a2_in_both_stages():
    cfg = method('focal')
    expected = h_focal(LOGITS.sigmoid(), Z).sum() / len(LOGITS)
    rpn_loss = build_loss(cfg.rpn_head)
    assert rpn_loss(LOGITS[:, None], LABELS, avg_factor=len(LOGITS)).item() == \
        pytest.approx(expected.item())
    roi_loss = build_loss(cfg.bbox_head)
    assert roi_loss(LOGITS[:, None], LABELS, avg_factor=len(LOGITS)).item() == \
        pytest.approx(expected.item())


def test_roi_focal_loss_gives_the_box_head_one_sigmoid_per_class():
    head = MODELS.build(dict(
        type='Shared2FCBBoxHead', in_channels=8, fc_out_channels=16, roi_feat_size=2,
        num_classes=3, loss_cls=loss_cfg(method('focal').bbox_head)))
    assert head.fc_cls.out_features == 3
    logits = torch.tensor([[3., -2., 0.], [-4., -3., -5.]])
    scores = head.loss_cls.get_activation(logits)
    assert scores.shape == (2, 4)
    assert torch.allclose(scores[:, :3], logits.sigmoid())
    assert torch.allclose(scores[:, 3], 1 - logits.sigmoid().max(1).values)
    # first RoI: class 0 (p = 0.95); second: background (all p < 0.05)
    acc = head.loss_cls.get_accuracy(logits, torch.tensor([0, 3]))
    assert acc['acc'].item() == pytest.approx(100.)
    acc = head.loss_cls.get_accuracy(logits, torch.tensor([3, 3]))
    assert acc['acc'].item() == pytest.approx(50.)
