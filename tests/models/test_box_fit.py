"""Box-fit negatives: OverlapRandomSampler and BoxFitShared2FCBBoxHead."""
import pytest
import torch
import torch.nn.functional as F
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmengine.structures import InstanceData

import mmdet_pu  # noqa: F401
from mmdet.registry import MODELS, TASK_UTILS
from mmdet.structures.bbox import bbox_overlaps
from tests._data import REPO
from tests.models.test_bde import losses_with, tiny_batch

GT = torch.tensor([[10., 10., 30., 30.]])
# IoU with GT: 1, 0.64, 0.25 (4x the area), 1/3 (shifted by half), 0 (elsewhere),
# 1/6.25 (6.25x the area); share of GT covered: 1, 0.64, 1, 0.5, 0, 1
PRIORS = torch.tensor([[10., 10., 30., 30.], [12., 12., 28., 28.], [0., 0., 40., 40.],
                       [20., 10., 40., 30.], [60., 60., 80., 80.], [-5., -5., 45., 45.]])


def sample(priors=PRIORS, gt=GT, **sampler_args):
    init_default_scope('mmdet')
    assigner = TASK_UTILS.build(dict(type='MaxIoUAssigner', pos_iou_thr=0.5,
                                     neg_iou_thr=0.5, min_pos_iou=0.5))
    sampler = TASK_UTILS.build(dict(type='OverlapRandomSampler', num=16,
                                    pos_fraction=0.5, **sampler_args))
    pred = InstanceData(priors=priors)
    gt_instances = InstanceData(bboxes=gt, labels=torch.zeros(len(gt), dtype=torch.long))
    assign = assigner.assign(pred, gt_instances)
    return sampler.sample(assign, pred, gt_instances)


@pytest.mark.parametrize('add_gt', [True, False])
def test_sampler_records_the_iou_of_each_negative(add_gt):
    result = sample(add_gt_as_proposals=add_gt)
    expected = bbox_overlaps(result.neg_priors, GT).max(dim=1).values
    assert torch.allclose(result.neg_max_overlaps, expected)
    assert sorted(result.neg_max_overlaps.tolist()) == pytest.approx(
        [0., 0.16, 0.25, 1 / 3])
    pairs = sorted(zip(result.neg_max_overlaps.tolist(), result.neg_max_coverage.tolist()))
    assert [cover for _, cover in pairs] == pytest.approx([0., 1., 1., 0.5])


def test_sampler_without_labeled_boxes_gives_zero_overlaps():
    result = sample(gt=torch.zeros(0, 4))
    assert result.neg_priors.size(0) == len(PRIORS)
    assert result.neg_max_overlaps.tolist() == [0.] * len(PRIORS)
    assert result.neg_max_coverage.tolist() == [0.] * len(PRIORS)


def model_cfg(method='pu'):
    return Config.fromfile(
        str(REPO / f'configs/synthetic/synthetic_keep1_{method}.py')).model


def box_fit_cfg(method='pu', **head_args):
    cfg = model_cfg(method)
    cfg.roi_head.bbox_head.update(type='BoxFitShared2FCBBoxHead', **head_args)
    cfg.train_cfg.rcnn.sampler.type = 'OverlapRandomSampler'
    return cfg


def build(cfg):
    init_default_scope('mmdet')
    torch.manual_seed(0)
    model = MODELS.build(cfg)
    model.init_weights()
    return model


# the negatives: 4x the area, shifted by half, elsewhere, 6.25x the area
@pytest.mark.parametrize('iou, cover, selected', [
    (0.25, None, [True, True, False, False]), (0.3, None, [False, True, False, False]),
    (0.3, 0.7, [True, True, False, True]), (0.25, 0.5, [True, True, False, True])])
def test_mask_marks_negatives_by_iou_or_coverage(iou, cover, selected):
    head = build(box_fit_cfg(box_fit_iou=iou, box_fit_cover=cover)).roi_head.bbox_head
    results = [sample(add_gt_as_proposals=False), sample(add_gt_as_proposals=False)]
    mask = head.box_fit_mask(results)
    # RoI order: per image its positives, then its negatives
    expected = []
    for result in results:
        order = {tuple(box): i for i, box in enumerate(PRIORS[2:].tolist())}
        expected += [False] * result.pos_priors.size(0)
        expected += [selected[order[tuple(box)]] for box in result.neg_priors.tolist()]
    assert mask.tolist() == expected
    assert sum(expected) == 2 * sum(selected)


def test_loss_is_the_weighted_background_cross_entropy_of_the_masked_rois():
    head = build(box_fit_cfg(box_fit_weight=0.5)).roi_head.bbox_head
    scores = torch.randn(6, 2, generator=torch.Generator().manual_seed(1),
                         requires_grad=True)
    mask = torch.tensor([False, True, False, True, True, False])
    loss = head.box_fit_loss(scores, mask)
    expected = 0.5 * -F.log_softmax(scores[mask], dim=1)[:, 1].mean()
    assert loss.item() == pytest.approx(expected.item())
    loss.backward()
    # only the masked RoIs get a gradient, each pushed towards the background
    assert (scores.grad[~mask] == 0).all()
    assert (scores.grad[mask, 0] > 0).all() and (scores.grad[mask, 1] < 0).all()
    empty = head.box_fit_loss(scores, torch.zeros(6, dtype=torch.bool))
    assert empty.item() == 0 and empty.requires_grad


def test_model_adds_the_term_and_keeps_the_other_losses():
    images, samples = tiny_batch()
    plain = losses_with(build(model_cfg('pu')), images, samples)
    box_fit = losses_with(build(box_fit_cfg()), images, samples)
    assert set(box_fit) == set(plain) | {'loss_box_fit'}
    for key, value in plain.items():
        assert box_fit[key].item() == pytest.approx(value.item(), rel=1e-5), key
    assert box_fit['loss_box_fit'].item() > 0


def test_head_needs_the_overlap_sampler():
    cfg = model_cfg('pu')
    cfg.roi_head.bbox_head.type = 'BoxFitShared2FCBBoxHead'
    images, samples = tiny_batch()
    with pytest.raises(ValueError, match="sampler.type='OverlapRandomSampler'"):
        losses_with(build(cfg), images, samples)


@pytest.mark.parametrize('args, match', [
    (dict(box_fit_iou=0.), 'box_fit_iou'), (dict(box_fit_iou=1.), 'box_fit_iou'),
    (dict(box_fit_cover=0.), 'box_fit_cover'), (dict(box_fit_cover=1.5), 'box_fit_cover'),
    (dict(box_fit_weight=-1.), 'box_fit_weight'),
    (dict(loss_cls=dict(type='CrossEntropyLoss', use_sigmoid=True)), 'softmax')])
def test_bad_arguments_are_named(args, match):
    cfg = box_fit_cfg(**args)
    if 'loss_cls' in args:
        cfg.roi_head.bbox_head.loss_cls = args['loss_cls']
    with pytest.raises(ValueError, match=match):
        build(cfg)
