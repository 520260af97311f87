"""Box-fit negatives of the dense anchor heads (BatchClsLossMixin, box_fit_weight > 0)."""
import pytest
import torch
import torch.nn.functional as F
from mmengine.structures import InstanceData

from mmdet.registry import MODELS
import mmdet_pu  # noqa: F401  (registers the heads and losses)
from tests.models._dense_detectors import DENSE, dense_head_cfg
from tests.models.test_pu_dense_heads import NUM_CLASSES, PRIORS, features, head_losses

ANCHOR_HEADS = ['retinanet', 'atss', 'gfl']


def pu_head(name, **head_args):
    cfg = dense_head_cfg(name, NUM_CLASSES, **head_args)
    cfg.loss_cls = dict(type=DENSE[name][3], priors=PRIORS)
    torch.manual_seed(0)
    return MODELS.build(dict(cfg, type=DENSE[name][2]))


def atss_level_scores():
    """Scores of a 128 px image pair on ATSS's five levels (strides 8-128), 682 anchors:
    level 0 holds 16 x 16 per image, level 4 one."""
    return [torch.zeros(2, NUM_CLASSES, 128 // s, 128 // s) for s in (8, 16, 32, 64, 128)]


def test_mask_marks_the_negative_anchors_that_fit_a_labeled_cell_badly():
    head = pu_head('atss', box_fit_weight=1.0)
    scores = atss_level_scores()
    anchors = head.prior_generator.grid_priors([s.shape[-2:] for s in scores], device='cpu')
    # level 0, (y, x) = (8, 8): a 64 px anchor at (64, 64); level 4: a 1024 px anchor
    assert anchors[0][136].tolist() == [32., 32., 96., 96.]
    gts = [InstanceData(bboxes=torch.tensor([[40., 40., 96., 96.]])),  # IoU 0.77
           InstanceData(bboxes=torch.zeros(0, 4))]                      # no labeled cell
    background = torch.full((682,), NUM_CLASSES)
    mask = head.box_fit_mask(scores, gts, background, torch.ones(682))
    assert mask[136] and not mask[0]  # the corner anchor [-32, -32, 32, 32] misses it
    assert mask[680]                  # IoU 0.003 but covers all of the cell (rule 2)
    assert not mask[256:512].any() and not mask[681]  # the image without cells
    positive = background.clone()
    positive[136] = 0
    ignored = torch.ones(682)
    ignored[680] = 0
    mask = head.box_fit_mask(scores, gts, positive, ignored)
    assert not mask[136] and not mask[680]
    without_cover = pu_head('atss', box_fit_weight=1.0, box_fit_cover=None)
    assert not without_cover.box_fit_mask(scores, gts, background, None)[680]


def test_loss_is_the_weighted_background_bce_of_the_masked_anchors():
    head = pu_head('atss', box_fit_weight=0.5)
    scores = torch.randn(6, NUM_CLASSES, generator=torch.Generator().manual_seed(1),
                         requires_grad=True)
    mask = torch.tensor([False, True, False, True, True, False])
    loss = head.box_fit_loss(scores, mask)
    expected = 0.5 * -F.logsigmoid(-scores[mask]).sum(dim=1).mean()
    assert loss.item() == pytest.approx(expected.item())
    loss.backward()
    assert (scores.grad[~mask] == 0).all() and (scores.grad[mask] > 0).all()
    empty = head.box_fit_loss(scores, torch.zeros(6, dtype=torch.bool))
    assert empty.item() == 0 and empty.requires_grad


@pytest.mark.parametrize('name', ANCHOR_HEADS)
def test_head_adds_the_term_and_keeps_its_other_losses(name):
    plain, box_fit = pu_head(name), pu_head(name, box_fit_weight=1.0)
    box_fit.load_state_dict(plain.state_dict())
    feats = features(dense_head_cfg(name, NUM_CLASSES))
    expected, actual = head_losses(plain, feats), head_losses(box_fit, feats)
    assert set(actual) == set(expected) | {'loss_box_fit'}
    for key in expected:
        torch.testing.assert_close(actual[key], expected[key])
    assert actual['loss_box_fit'] > 0


@pytest.mark.parametrize('name', ['fcos', 'rtmdet'])
def test_point_heads_refuse_box_fit_negatives(name):
    with pytest.raises(ValueError, match='box_fit_weight: .* places no anchors'):
        pu_head(name, box_fit_weight=1.0)
    assert pu_head(name).box_fit_weight == 0  # off by default


@pytest.mark.parametrize('args, match', [
    (dict(box_fit_iou=1.), 'bbox_head.box_fit_iou'),
    (dict(box_fit_cover=0.), 'bbox_head.box_fit_cover'),
    (dict(box_fit_weight=-1.), 'bbox_head.box_fit_weight')])
def test_bad_arguments_are_named(args, match):
    with pytest.raises(ValueError, match=match):
        pu_head('atss', **args)
