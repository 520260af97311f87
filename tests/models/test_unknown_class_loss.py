"""UnknownClassCELoss: cross entropy in which a cell may have no known class."""
import pytest
import torch
import torch.nn.functional as F

import mmdet_pu  # noqa: F401
from mmdet.registry import MODELS

LOGITS = torch.tensor([[2.0, -1.0, 0.5, 0.1, 0.3],
                       [-0.5, 1.5, 0.0, -2.0, 1.0],
                       [0.2, 0.2, 0.2, 0.2, 3.0],
                       [1.0, 0.0, -1.0, 2.0, -0.5]])
# four classes: 0-3 a class, 4 background, 5 a cell of unknown class
LABELS = torch.tensor([0, 4, 5, 3])


def build(**kwargs):
    return MODELS.build(dict(type='UnknownClassCELoss', **kwargs))


def test_a_class_or_the_background_is_mmdets_cross_entropy():
    loss = build(reduction='none')
    known = LABELS != 5
    expected = F.cross_entropy(LOGITS[known], LABELS[known], reduction='none')
    assert torch.allclose(loss(LOGITS, LABELS)[known], expected)


def test_a_cell_of_unknown_class_is_the_likelihood_of_any_class():
    p = LOGITS[2].softmax(0)
    value = build(reduction='none')(LOGITS, LABELS)[2]
    assert value.item() == pytest.approx(-torch.log(p[:4].sum()).item())
    assert value.item() == pytest.approx(-torch.log(1 - p[4]).item())


def test_unknown_class_teaches_cell_against_background_not_the_classes():
    logits = LOGITS[2:3].clone().requires_grad_()
    build()(logits, torch.tensor([5])).backward()
    p = logits.detach().softmax(1)[0]
    grad = logits.grad[0]
    # d/dz_m of -log(1 - p_bg) = p_m - p_m / (1 - p_bg): every class is raised in
    # proportion to its probability, so p(m | cell) does not move; the background falls
    assert grad[4].item() == pytest.approx(p[4].item())
    ratios = grad[:4] / p[:4]
    assert torch.allclose(ratios, torch.full_like(ratios, -p[4] / (1 - p[4])), atol=1e-6)


def test_weights_and_avg_factor_reduce_like_mmdet():
    weight = torch.tensor([1.0, 0.0, 2.0, 1.0])
    per_sample = build(reduction='none')(LOGITS, LABELS)
    loss = build(loss_weight=2.0)(LOGITS, LABELS, weight, avg_factor=3.0)
    assert loss.item() == pytest.approx(2.0 * (per_sample * weight).sum().item() / 3.0)


def test_a_label_outside_the_range_is_an_error_naming_the_range():
    with pytest.raises(ValueError, match=r'expected labels in \[0, 5\].*from 0 to 6'):
        build()(LOGITS, torch.tensor([0, 6, 5, 3]))
    with pytest.raises(ValueError, match='use_sigmoid'):
        build(use_sigmoid=True)


def test_accuracy_counts_an_unknown_cell_right_where_any_class_wins():
    loss = build()
    # arg-max: 0, 1, 4 (background), 3; the unknown cell (row 2) is called background
    assert loss.get_accuracy(LOGITS, LABELS)['acc'].item() == pytest.approx(50.0)
    assert loss.get_accuracy(LOGITS, torch.tensor([0, 1, 4, 5]))['acc'].item() \
        == pytest.approx(100.0)


def test_in_an_mmdet_box_head_unknown_cells_train_the_classifier_not_the_regressor():
    head = MODELS.build(dict(
        type='Shared2FCBBoxHead', in_channels=4, fc_out_channels=8, roi_feat_size=2,
        num_classes=4, reg_class_agnostic=True,
        bbox_coder=dict(type='DeltaXYWHBBoxCoder', target_means=[0.0] * 4,
                        target_stds=[0.1, 0.1, 0.2, 0.2]),
        loss_cls=dict(type='UnknownClassCELoss'),
        loss_bbox=dict(type='L1Loss', loss_weight=1.0)))
    assert head.fc_cls.out_features == 5
    cls_score, bbox_pred = torch.randn(4, 5), torch.randn(4, 4)
    rois = torch.tensor([[0, 0, 0, 10, 10]] * 4, dtype=torch.float)
    targets = torch.randn(4, 4)
    losses = head.loss(cls_score, bbox_pred, rois, LABELS, torch.ones(4), targets,
                       torch.ones(4, 4))
    expected_cls = build(reduction='none')(cls_score, LABELS).mean()
    assert losses['loss_cls'].item() == pytest.approx(expected_cls.item())
    # regression on the two cells of a known class (rows 0 and 3) only
    expected_reg = (bbox_pred[[0, 3]] - targets[[0, 3]]).abs().sum() / 4
    assert losses['loss_bbox'].item() == pytest.approx(expected_reg.item())
    scores = head.loss_cls.get_activation(cls_score)
    assert torch.allclose(scores, cls_score.softmax(1))
