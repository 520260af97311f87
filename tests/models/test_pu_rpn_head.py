"""PURPNHead: one loss call per mini-batch over all FPN levels (docs/method.md#binary-pu-risk)."""
import pytest
import torch
import torch.nn.functional as F
from mmengine.config import ConfigDict
from mmengine.structures import InstanceData

from mmdet.registry import MODELS
import mmdet_pu  # noqa: F401  (registers PURPNHead and PULoss)

STRIDES = [4, 8, 16, 32, 64]
IMG_SIZE = 128
PRIOR = 0.2


def rpn_cfg(head_type, loss_cls, **kwargs):
    """The slim Faster R-CNN RPN (configs/_base_/models) with 8 feature channels."""
    cfg = ConfigDict(
        type=head_type, in_channels=8, feat_channels=8,
        anchor_generator=dict(type='AnchorGenerator', scales=[4], ratios=[1.0],
                              strides=STRIDES),
        bbox_coder=dict(type='DeltaXYWHBBoxCoder', target_means=[0.0] * 4,
                        target_stds=[1.0] * 4),
        loss_cls=loss_cls, loss_bbox=dict(type='L1Loss', loss_weight=1.0),
        train_cfg=dict(
            assigner=dict(type='MaxIoUAssigner', pos_iou_thr=0.7, neg_iou_thr=0.3,
                          min_pos_iou=0.3, match_low_quality=True,
                          ignore_iof_thr=-1),
            sampler=dict(type='RandomSampler', num=256, pos_fraction=0.5,
                         neg_pos_ub=-1, add_gt_as_proposals=False),
            allowed_border=-1, pos_weight=-1, debug=False))
    cfg.update(kwargs)
    return cfg


def batch(seed=0):
    """Random FPN features of two 128 px images and their ground truth (16 and 32 px
    boxes, so positives fall on the first two levels)."""
    gen = torch.Generator().manual_seed(seed)
    feats = [torch.randn(2, 8, IMG_SIZE // s, IMG_SIZE // s, generator=gen)
             for s in STRIDES]
    gt = []
    for _ in range(2):
        xy = torch.rand(4, 2, generator=gen) * 80 + 8
        size = torch.tensor([16.0, 16.0, 32.0, 32.0])[:, None]
        gt.append(InstanceData(bboxes=torch.cat([xy, xy + size], dim=1),
                               labels=torch.zeros(4, dtype=torch.long)))
    metas = [dict(img_shape=(IMG_SIZE, IMG_SIZE), pad_shape=(IMG_SIZE, IMG_SIZE),
                  batch_input_shape=(IMG_SIZE, IMG_SIZE)) for _ in range(2)]
    return feats, gt, metas


def rpn_losses(head, feats, gt, metas):
    cls_scores, bbox_preds = head(feats)
    torch.manual_seed(0)  # the anchor sampler is random
    losses = head.loss_by_feat(cls_scores, bbox_preds, gt, metas)
    return {key: sum(value) if isinstance(value, list) else value
            for key, value in losses.items()}


def twin_heads(loss_cls, **kwargs):
    reference = MODELS.build(rpn_cfg('RPNHead', loss_cls, **kwargs))
    batch_level = MODELS.build(rpn_cfg('PURPNHead', loss_cls, **kwargs))
    batch_level.load_state_dict(reference.state_dict())
    return reference, batch_level


@pytest.mark.parametrize('loss_cls,extra', [
    (dict(type='CrossEntropyLoss', use_sigmoid=True), {}),
    (dict(type='CrossEntropyLoss', use_sigmoid=False), {}),
    (dict(type='CrossEntropyLoss', use_sigmoid=True),
     dict(reg_decoded_bbox=True, loss_bbox=dict(type='GIoULoss', loss_weight=1.0))),
])
def test_cross_entropy_equals_rpn_head(loss_cls, extra):
    reference, batch_level = twin_heads(loss_cls, **extra)
    feats, gt, metas = batch()
    expected = rpn_losses(reference, feats, gt, metas)
    actual = rpn_losses(batch_level, feats, gt, metas)
    assert set(actual) == {'loss_rpn_cls', 'loss_rpn_bbox'}
    for key in expected:
        assert actual[key].dim() == 0
        torch.testing.assert_close(actual[key], expected[key], rtol=1e-5, atol=1e-7)


def sampled_anchors(head, feats, gt, metas):
    """Concatenated logits, labels and weights of every anchor of the batch."""
    cls_scores, _ = head(feats)
    anchors, valid = head.get_anchors([s.shape[-2:] for s in cls_scores], metas,
                                      device='cpu')
    torch.manual_seed(0)  # same sampling as in rpn_losses
    labels, weights, *_ = head.get_targets(anchors, valid, gt, metas)
    logits = torch.cat([s.permute(0, 2, 3, 1).reshape(-1) for s in cls_scores])
    level = torch.cat([torch.full((lab.numel(),), i) for i, lab in enumerate(labels)])
    return (logits, torch.cat([lab.reshape(-1) for lab in labels]),
            torch.cat([w.reshape(-1) for w in weights]), level)


def pu_risk(logits, labels, weights):
    """The paper's L_cls^pu (Section 2.2.1) with H(c,1) = -log s, H(c,0) = -log(1 - s);
    without positives, the mean H(c,0) over U (docs/method.md#binary-pu-risk)."""
    pos = (labels == 0) & (weights > 0)
    unl = (labels == 1) & (weights > 0)
    h1, h0 = -F.logsigmoid(logits), -F.logsigmoid(-logits)
    n_p, n_u = weights[pos].sum(), weights[unl].sum()
    marginal = ((weights[unl] * h0[unl]).sum() + (weights[pos] * h0[pos]).sum()) / (
        n_u + n_p)
    if n_p == 0:
        return marginal
    positive_risk = PRIOR / n_p * (weights[pos] * h1[pos]).sum()
    negative_risk = marginal - PRIOR / n_p * (weights[pos] * h0[pos]).sum()
    return positive_risk + torch.clamp(negative_risk, min=0)


def test_pu_risk_is_estimated_over_the_whole_batch():
    reference, head = twin_heads(dict(type='PULoss', prior=PRIOR, use_sigmoid=True))
    feats, gt, metas = batch()
    with torch.no_grad():
        logits, labels, weights, level = sampled_anchors(head, feats, gt, metas)
    pos = (labels == 0) & (weights > 0)
    # both images (256 samples each) and positives on more than one level
    assert int((weights > 0).sum()) == 2 * 256
    assert len(level[pos].unique()) > 1
    expected = pu_risk(logits, labels, weights)

    actual = rpn_losses(head, feats, gt, metas)['loss_rpn_cls']
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-7)
    # mmdet's per-level calls give another estimate (the next test)
    per_level = rpn_losses(reference, feats, gt, metas)['loss_rpn_cls']
    assert not torch.isclose(per_level, expected, rtol=1e-2)


def test_rpn_head_sums_one_pu_risk_per_level():
    """mmdet's RPNHead with PULoss (the synthetic multi-class config): one risk per FPN
    level, summed; a level whose sampled anchors match no cell is plain negatives."""
    head, _ = twin_heads(dict(type='PULoss', prior=PRIOR, use_sigmoid=True))
    feats, gt, metas = batch()
    with torch.no_grad():
        logits, labels, weights, level = sampled_anchors(head, feats, gt, metas)
    sampled = [i for i in range(len(STRIDES)) if (weights[level == i] > 0).any()]
    with_cells = set(level[(labels == 0) & (weights > 0)].tolist())
    assert set(sampled) - with_cells, 'a sampled level without positives'
    expected = sum(pu_risk(logits[level == i], labels[level == i], weights[level == i])
                   for i in sampled)

    actual = rpn_losses(head, feats, gt, metas)['loss_rpn_cls']
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-7)


def test_gradients_reach_exactly_the_levels_with_sampled_anchors():
    _, head = twin_heads(dict(type='PULoss', prior=PRIOR, use_sigmoid=True))
    feats, gt, metas = batch()
    with torch.no_grad():
        _, _, weights, level = sampled_anchors(head, feats, gt, metas)
    sampled_levels = set(level[weights > 0].tolist())
    feats = [f.requires_grad_(True) for f in feats]
    rpn_losses(head, feats, gt, metas)['loss_rpn_cls'].backward()
    assert {i for i, f in enumerate(feats) if f.grad.abs().sum() > 0} == sampled_levels
    assert len(sampled_levels) >= 3
