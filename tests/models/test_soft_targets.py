"""Score-weighted cells: OverlapRandomSampler's pos_gt_weights and SoftTargetMixin's
soft targets in BoxFitShared2FCBBoxHead."""
import pytest
import torch
import torch.nn.functional as F
from mmengine.registry import init_default_scope
from mmengine.structures import InstanceData

from mmdet.models.task_modules.samplers import SamplingResult
from mmdet.registry import TASK_UTILS
from tests.models.test_bde import losses_with, tiny_batch
from tests.models.test_box_fit import PRIORS, box_fit_cfg, build, sample


def own_loss_cfg():
    """The distilled student's head: box-fit, the detector's own cross entropy."""
    cfg = box_fit_cfg('ce')
    cfg.roi_head.bbox_head.loss_cls = dict(type='CrossEntropyLoss', use_sigmoid=False,
                                           loss_weight=1.0)
    return cfg


def test_sampler_gives_each_positive_the_weight_of_its_cell():
    init_default_scope('mmdet')
    gt = torch.tensor([[10., 10., 30., 30.], [60., 60., 80., 80.]])
    priors = torch.cat([PRIORS, torch.tensor([[61., 61., 80., 80.]])])
    assigner = TASK_UTILS.build(dict(type='MaxIoUAssigner', pos_iou_thr=0.5,
                                     neg_iou_thr=0.5, min_pos_iou=0.5))
    sampler = TASK_UTILS.build(dict(type='OverlapRandomSampler', num=32,
                                    pos_fraction=0.5))
    pred = InstanceData(priors=priors)
    cells = InstanceData(bboxes=gt, labels=torch.zeros(2, dtype=torch.long),
                         weights=torch.tensor([0.3, 0.8]))
    result = sampler.sample(assigner.assign(pred, cells), pred, cells)
    expected = torch.tensor([0.3, 0.8])[result.pos_assigned_gt_inds]
    assert result.pos_gt_weights.tolist() == pytest.approx(expected.tolist())
    assert sorted(set(result.pos_gt_weights.tolist())) == pytest.approx([0.3, 0.8])
    assert not hasattr(sample(), 'pos_gt_weights')  # cells without weights


def fake_result(num_pos, num_neg, weights=None):
    result = SamplingResult.__new__(SamplingResult)
    result.pos_priors, result.neg_priors = torch.zeros(num_pos, 4), torch.zeros(num_neg, 4)
    if weights is not None:
        result.pos_gt_weights = torch.tensor(weights)
    return result


def test_roi_weights_are_the_cells_weights_in_roi_order():
    head = build(own_loss_cfg()).roi_head.bbox_head
    assert head.roi_weights([fake_result(2, 3), fake_result(1, 1)]) is None
    weights = head.roi_weights([fake_result(2, 3, [0.2, 0.9]), fake_result(1, 1)])
    assert [w.tolist() for w in weights] == [pytest.approx([0.2, 0.9, 1, 1, 1]), [1, 1]]


def test_soft_targets_are_the_cross_entropy_with_the_weighted_target():
    """loss_cls + loss_soft_bg = 1/N sum_k [w_k H(c_k, m_k) + (1 - w_k) H(c_k, bg)]."""
    head = build(own_loss_cfg()).roi_head.bbox_head
    results = [sample(add_gt_as_proposals=True)]
    num_pos = results[0].pos_priors.size(0)
    weights = torch.linspace(0.2, 0.9, num_pos)
    results[0].pos_gt_weights = weights
    rois = torch.cat([results[0].pos_priors, results[0].neg_priors])
    scores = torch.randn(len(rois), 2, generator=torch.Generator().manual_seed(2))
    deltas = torch.zeros(len(rois), 4)
    roi_tensor = torch.cat([rois.new_zeros(len(rois), 1), rois], dim=1)
    train_cfg = build(own_loss_cfg()).roi_head.train_cfg
    losses = head.loss_and_target(scores, deltas, roi_tensor, results, train_cfg)['loss_bbox']
    log_p = F.log_softmax(scores, dim=1)
    w = torch.cat([weights, torch.ones(len(rois) - num_pos)])
    target = torch.cat([torch.zeros(num_pos, dtype=torch.long),
                        torch.ones(len(rois) - num_pos, dtype=torch.long)])
    h_label = -log_p.gather(1, target[:, None])[:, 0]
    expected = (w * h_label + (1 - w) * -log_p[:, 1]).sum() / len(rois)
    total = losses['loss_cls'] + losses['loss_soft_bg']
    assert total.item() == pytest.approx(expected.item(), rel=1e-5)
    assert losses['loss_soft_bg'].item() == pytest.approx(
        ((1 - weights) * -log_p[:num_pos, 1]).sum().item() / len(rois), rel=1e-5)


def test_a_model_with_unit_weights_trains_as_without_them():
    images, samples = tiny_batch()
    model = build(own_loss_cfg())
    plain = losses_with(model, images, samples)
    for s in samples:
        s.gt_instances.weights = torch.ones(len(s.gt_instances))
    weighted = losses_with(model, images, samples)
    assert set(weighted) == set(plain) | {'loss_soft_bg'}
    assert weighted['loss_soft_bg'].item() == 0
    for key, value in plain.items():
        assert weighted[key].item() == pytest.approx(value.item(), rel=1e-5), key
    for s in samples:
        s.gt_instances.weights = torch.full((len(s.gt_instances), ), 0.5)
    halved = losses_with(model, images, samples)
    assert halved['loss_soft_bg'].item() > 0
    assert halved['loss_cls'].item() < plain['loss_cls'].item()
    assert halved['loss_bbox'].item() == pytest.approx(plain['loss_bbox'].item(), rel=1e-5)


def test_soft_targets_need_a_softmax_classifier():
    head = build(own_loss_cfg()).roi_head.bbox_head
    head.loss_cls.use_sigmoid = True
    with pytest.raises(ValueError, match='softmax classifier'):
        head.soft_background_loss(torch.zeros(3, 2), torch.ones(3))
