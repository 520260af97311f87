"""BDE reconstruction: the density weights, and both heads feeding them to the loss."""
import pytest
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmengine.structures import InstanceData

import mmdet_pu  # noqa: F401
from mmdet.registry import MODELS
from mmdet.structures import DetDataSample
from mmdet_pu.models.dense_heads import bde_rpn_head
from mmdet_pu.models.losses.bde import (bde_weights, box_centres, l1_diameter,
                                        mean_l1_distance)
from mmdet_pu.models.roi_heads import bde_bbox_head
from tests._data import REPO


def brute_force_weights(points):
    distances = torch.cdist(points.double(), points.double(), p=1)
    return (distances.mean(1) / distances.max()).to(points.dtype)


def test_formula_on_a_hand_computed_example():
    # pairwise L1 distances: ab 1, ac 2, ad 6, bc 3, bd 5, cd 4 -> diameter 6;
    # mean distances (self included): a, b, c 9/4, d 15/4
    points = torch.tensor([[0., 0.], [1., 0.], [0., 2.], [3., 3.]])
    weights = bde_weights(points)
    assert torch.allclose(weights, torch.tensor([0.375, 0.375, 0.375, 0.625]))
    assert l1_diameter(points).item() == 6
    assert torch.allclose(mean_l1_distance(points[3:], points).float(),
                          torch.tensor([15 / 4]))


def test_clustered_samples_get_small_weights_isolated_ones_large():
    generator = torch.Generator().manual_seed(0)
    cluster = torch.tensor([100., 100.]) + 3 * torch.randn(30, 2, generator=generator)
    isolated = torch.tensor([[400., 400.]])  # ~600 px (L1) from the cluster
    weights = bde_weights(torch.cat([cluster, isolated]))
    assert weights[:30].max() < 0.1
    assert weights[30] > 0.9


def test_sorted_prefix_sums_match_the_distance_matrix():
    generator = torch.Generator().manual_seed(1)
    points = 500 * torch.rand(257, 2, generator=generator)
    points[10] = points[11]  # ties
    assert torch.allclose(bde_weights(points), brute_force_weights(points), atol=1e-6)
    query = points[::7]
    expected = torch.cdist(query.double(), points.double(), p=1).mean(1)
    assert torch.allclose(mean_l1_distance(query, points), expected)


def test_degenerate_and_outside_queries():
    same = torch.full((5, 2), 7.)
    assert torch.equal(bde_weights(same), torch.ones(5))
    reference = torch.tensor([[0., 0.], [1., 1.]])
    far = torch.tensor([[50., 50.]])
    assert bde_weights(far, reference).item() == 1.0
    with pytest.raises(ValueError, match=r'\(M, 2\)'):
        bde_weights(torch.zeros(3, 4))
    with pytest.raises(ValueError, match='at least one'):
        bde_weights(torch.zeros(3, 2), torch.zeros(0, 2))


def test_box_centres():
    boxes = torch.tensor([[0., 0., 10., 20.], [4., 6., 8., 8.]])
    assert torch.equal(box_centres(boxes), torch.tensor([[5., 10.], [6., 7.]]))


# ---------------------------------------------------------------- heads ---------------

def slim_model_cfg(method):
    """The slim Faster R-CNN of the synthetic experiment config of ``method``."""
    return Config.fromfile(
        str(REPO / f'configs/synthetic/synthetic_keep1_{method}.py')).model


def tiny_batch(size=128):
    generator = torch.Generator().manual_seed(0)
    images = torch.rand(2, 3, size, size, generator=generator) * 255
    samples = []
    for boxes in ([[20., 20., 44., 44.], [70., 80., 94., 104.]], [[30., 60., 54., 84.]]):
        sample = DetDataSample(metainfo=dict(
            img_shape=(size, size), ori_shape=(size, size), pad_shape=(size, size),
            batch_input_shape=(size, size), scale_factor=(1., 1.)))
        sample.gt_instances = InstanceData(
            bboxes=torch.tensor(boxes), labels=torch.zeros(len(boxes), dtype=torch.long))
        samples.append(sample)
    return images, samples


def losses_with(model, images, samples, bde_patch=None, monkeypatch=None):
    """Losses of one step; ``bde_patch`` replaces bde_weights in both heads."""
    if bde_patch is not None:
        monkeypatch.setattr(bde_rpn_head, 'bde_weights', bde_patch)
        monkeypatch.setattr(bde_bbox_head, 'bde_weights', bde_patch)
    torch.manual_seed(0)  # same sampled anchors / RoIs in every call
    data = model.data_preprocessor(dict(inputs=list(images), data_samples=samples),
                                   training=True)
    with torch.no_grad():
        losses = model.loss(data['inputs'], data['data_samples'])
    return {k: sum(v) if isinstance(v, list) else v for k, v in losses.items()}


@pytest.fixture(scope='module')
def bde_model():
    init_default_scope('mmdet')
    torch.manual_seed(0)
    model = MODELS.build(slim_model_cfg('bde'))
    model.init_weights()
    return model


def test_bde_method_builds_the_bde_heads(bde_model):
    assert type(bde_model.rpn_head).__name__ == 'BDERPNHead'
    assert type(bde_model.roi_head.bbox_head).__name__ == 'BDEShared2FCBBoxHead'


def test_weights_reach_both_losses(bde_model, monkeypatch):
    images, samples = tiny_batch()
    calls = []

    def constant(value):
        def weights(query, reference=None):
            calls.append((query.shape[0], reference.shape[0]))
            return query.new_full((query.shape[0], ), value)
        return weights

    real = losses_with(bde_model, images, samples)
    scaled = {}
    for value in (1., 0.5, 0.25):
        with monkeypatch.context() as patch:
            scaled[value] = losses_with(bde_model, images, samples, constant(value), patch)
    for key in ('loss_rpn_cls', 'loss_cls'):
        # the loss is linear in the weight of the unlabeled samples ...
        assert (scaled[1.][key] - scaled[.5][key]).item() == pytest.approx(
            2 * (scaled[.5][key] - scaled[.25][key]).item(), rel=1e-4)
        assert scaled[.25][key] < scaled[.5][key] < scaled[1.][key]
        # ... and the real weights, all in (0, 1), lower it
        assert real[key] < scaled[1.][key]
    one = scaled[1.]
    # weights change the classification losses only
    for key in ('loss_rpn_bbox', 'loss_bbox'):
        assert real[key].item() == pytest.approx(one[key].item(), rel=1e-6)
    # per image: the RPN queries its sampled unlabeled anchors against all its anchors
    # (FPN strides 4-64 on 128 px: 32^2 + 16^2 + 8^2 + 4^2 + 2^2 anchors), the RoI head
    # its unlabeled RoIs against all its sampled RoIs
    rpn_calls = [c for c in calls if c[1] == 1364]
    assert len(rpn_calls) == 3 * 2
    assert all(0 < q < 256 for q, _ in rpn_calls)
    roi_calls = [c for c in calls if c[1] != 1364]
    assert len(roi_calls) == 3 * 2 and all(q < r <= 128 for q, r in roi_calls)


def test_plain_heads_match_bde_heads_with_unit_weights(bde_model, monkeypatch):
    images, samples = tiny_batch()
    ce_model = MODELS.build(slim_model_cfg('ce'))
    ce_model.load_state_dict(bde_model.state_dict())
    plain = losses_with(ce_model, images, samples)
    with monkeypatch.context() as patch:
        ones = losses_with(bde_model, images, samples,
                           lambda q, r=None: q.new_ones(q.shape[0]), patch)
    for key, value in plain.items():
        assert ones[key].item() == pytest.approx(value.item(), rel=1e-5), key


def test_bbox_head_needs_concatenated_targets(bde_model):
    with pytest.raises(ValueError, match='concat=True'):
        bde_model.roi_head.bbox_head.loss_and_target(
            None, None, None, [], bde_model.roi_head.train_cfg,
            concat=False)
