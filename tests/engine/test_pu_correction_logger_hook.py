"""PUCorrectionLoggerHook and the losses' count of non-negativity corrections."""
from types import SimpleNamespace

import pytest
import torch
from mmengine.logging import MessageHub
from torch import nn

from mmdet_pu.engine.hooks import PUCorrectionLoggerHook
from mmdet_pu.engine.hooks.pu_correction_logger_hook import pu_losses
from mmdet_pu.models.losses import FocalPULoss, PULoss, nonnegative_risk, pu_risk_terms

# One labeled positive (label 0) and three unlabeled samples (label 1), one logit each.
LABELS = torch.tensor([0, 1, 1, 1])


def scores(positive: float, unlabeled: float) -> torch.Tensor:
    return torch.tensor([[positive], [unlabeled], [unlabeled], [unlabeled]])


def bracket(loss, cls_score):
    """r of the loss on ``cls_score``, from the same terms the loss uses."""
    h_label, h_bg = loss.loss_terms(cls_score, LABELS, None)
    return pu_risk_terms(h_label, h_bg, LABELS, torch.ones(4), loss.class_priors)[1]


def test_the_terms_make_the_risk():
    loss = FocalPULoss(prior=0.5)
    cls_score = scores(2.0, -1.0)
    h_label, h_bg = loss.loss_terms(cls_score, LABELS, None)
    positive, negative = pu_risk_terms(h_label, h_bg, LABELS, torch.ones(4),
                                       loss.class_priors)
    # R_p = pi H(c_P, 1); r = mean H(c, bg) over U ∪ P - pi H(c_P, bg)
    assert positive == pytest.approx(0.5 * float(h_label[0]))
    assert negative == pytest.approx(float(h_bg.mean() - 0.5 * h_bg[0]))
    expected = (positive + negative.clamp(min=0)) / 0.5
    assert float(loss(cls_score, LABELS)) == pytest.approx(float(expected))
    assert float(nonnegative_risk(positive, -negative.abs())) == pytest.approx(
        float(positive))


def test_the_loss_counts_the_estimates_the_clamp_replaced():
    loss = FocalPULoss(prior=0.5)
    confident, timid = scores(5.0, -5.0), scores(-5.0, -5.0)
    assert bracket(loss, confident) < 0 < bracket(loss, timid)
    assert loss.pop_correction_share() is None
    loss(confident, LABELS)
    loss(timid, LABELS)
    loss(timid, LABELS)
    assert loss.pop_correction_share() == pytest.approx(1 / 3)
    assert loss.pop_correction_share() is None
    loss(confident, LABELS)
    assert loss.pop_correction_share() == 1.0


def test_nnpu_counts_only_brackets_below_minus_beta():
    clamp = FocalPULoss(prior=0.5)
    cls_score = scores(0.5, -0.5)
    r = float(bracket(clamp, cls_score))
    assert r < 0
    for beta, corrected in ((0.0, 1.0), (-r / 2, 1.0), (-2 * r, 0.0)):
        loss = FocalPULoss(prior=0.5, nonnegative='nnpu', nnpu_beta=beta)
        loss(cls_score, LABELS)
        assert loss.pop_correction_share() == corrected, beta


class TwoStage(nn.Module):
    """The module paths of a Faster R-CNN's PU losses, and a loss that is not PU."""

    def __init__(self):
        super().__init__()
        self.rpn_head = nn.Module()
        self.rpn_head.loss_cls = FocalPULoss(prior=0.5)
        self.rpn_head.loss_bbox = nn.L1Loss()
        self.roi_head = nn.Module()
        self.roi_head.bbox_head = nn.Module()
        self.roi_head.bbox_head.loss_cls = PULoss(prior=0.25)


def run_hook(model, iterations, window=10):
    hub = MessageHub.get_instance(f'test_pu_correction_logger_hook_{window}')
    runner = SimpleNamespace(model=model, message_hub=hub)
    hook = PUCorrectionLoggerHook(window)
    hook.before_train(runner)
    for calls in iterations:
        for cls_score in calls:
            model.rpn_head.loss_cls(cls_score, LABELS)
        hook.after_train_iter(runner, 0)
    return hub


def test_the_hook_logs_each_pu_loss_per_iteration():
    model = TwoStage()
    assert list(pu_losses(model)) == ['rpn_head', 'roi_head.bbox_head']
    confident, timid = scores(5.0, -5.0), scores(-5.0, -5.0)
    # three iterations: one clamped call; two calls (as RPNHead per level), one
    # clamped; one call not clamped. The RoI loss is never called: nothing logged.
    iterations = [[confident], [confident, timid], [timid]]
    hub = run_hook(model, iterations, window=1)
    assert hub.get_scalar('train/pu_corrected.rpn_head').data[0].tolist() == [
        1.0, 0.5, 0.0]
    assert 'train/pu_corrected.roi_head.bbox_head' not in hub.log_scalars
    # the logger prints the current value: the hook writes the mean of its window
    hub = run_hook(model, iterations, window=2)
    assert hub.get_scalar('train/pu_corrected.rpn_head').data[0].tolist() == [
        1.0, 0.75, 0.25]


def test_the_window_is_checked():
    with pytest.raises(ValueError, match='window'):
        PUCorrectionLoggerHook(0)


def test_the_hook_logs_nothing_without_pu_losses():
    hub = MessageHub.get_instance('test_pu_correction_logger_hook_none')
    runner = SimpleNamespace(model=nn.Linear(2, 2), message_hub=hub)
    hook = PUCorrectionLoggerHook()
    hook.before_train(runner)
    hook.after_train_iter(runner, 0)
    assert not any('pu_corrected' in key for key in hub.log_scalars)
