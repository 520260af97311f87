"""Prior estimators (BBE, label frequency, risk-matched) and the samples the two stages
draw."""
import numpy as np
import pytest
import torch
from mmengine.config import ConfigDict
from mmengine.registry import init_default_scope
from mmengine.structures import InstanceData

from mmdet.models.dense_heads import RPNHead
from mmdet.registry import MODELS
from mmdet_pu.prior.estimation import (ImageSamples, best_bin_estimate, estimate_priors,
                                       prior_from_mixture, pseudo_complete, recommend,
                                       risk_matched_priors)
from mmdet_pu.prior.samples import roi_samples, rpn_samples


def _beta_mixture(alpha, n=2000, seed=0):
    """P ~ Beta(5, 1); U = alpha P + (1 - alpha) N with N ~ Beta(1, 5)."""
    rng = np.random.default_rng(seed)
    positives = rng.beta(5, 1, n)
    positive_in_u = rng.random(n) < alpha
    unlabeled = np.where(positive_in_u, rng.beta(5, 1, n), rng.beta(1, 5, n))
    return positives, unlabeled, positive_in_u.mean()


@pytest.mark.parametrize('alpha', [0.3, 0.1])
def test_bbe_recovers_a_known_mixture_proportion(alpha):
    p, u, drawn = _beta_mixture(alpha)
    result = best_bin_estimate(p, u)
    assert abs(result.alpha - drawn) < 0.05
    assert (result.n_p, result.n_u) == (2000, 2000)
    # the chosen bin: alpha is q_u / q_p there, and the bound holds it
    assert result.alpha == pytest.approx(result.q_u / result.q_p)
    # the paper's bound: (q_u + (1 + gamma) (DKW_u + DKW_p)) / q_p, delta 0.1, gamma 0.01
    slack = 1.01 * 2 * np.sqrt(np.log(4 / 0.1) / (2 * 2000))
    assert result.upper_bound == pytest.approx((result.q_u + slack) / result.q_p)
    assert result.q_p == pytest.approx(np.mean(p >= result.threshold))
    assert result.q_u == pytest.approx(np.mean(u >= result.threshold))


def test_bbe_with_a_pure_top_bin_is_exact():
    # positives score 0.9, negatives 0.1: the top bin holds the positives only
    u = np.array([0.9] * 30 + [0.1] * 70)
    result = best_bin_estimate(np.full(50, 0.9), u)
    assert result.alpha == pytest.approx(0.3)
    assert result.threshold == pytest.approx(0.9)


def test_bbe_degenerate_inputs_are_clear_errors():
    with pytest.raises(ValueError, match='n_p=0, n_u=3'):
        best_bin_estimate([], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match='n_p=2, n_u=0'):
        best_bin_estimate([0.5, 0.6], np.zeros(0))
    with pytest.raises(ValueError, match='finite'):
        best_bin_estimate([0.5, np.nan], [0.1])
    with pytest.raises(ValueError, match='delta'):
        best_bin_estimate([0.5], [0.1], delta=1.5)


def test_prior_over_u_and_p():
    assert prior_from_mixture(0.2, n_p=10, n_u=90) == pytest.approx((10 + 18) / 100)
    # several classes: n also counts the other classes' labeled positives
    assert prior_from_mixture(0.2, n_p=10, n_u=90, n=120) == pytest.approx(28 / 120)
    with pytest.raises(ValueError, match='n >= n_p'):
        prior_from_mixture(0.2, n_p=10, n_u=90, n=50)


def test_recommendation_prefers_the_risk_matched_prior():
    assert recommend(False, risk_matched_prior=0.25, bbe_prior=0.3)[0] == 'risk_matched'
    name, reason = recommend(True, risk_matched_prior=0.25, bbe_prior=0.3)
    assert name == 'risk_matched' and '--split train' in reason
    # without it: BBE on held-out images, else the label frequency
    assert recommend(True, risk_matched_prior=None, bbe_prior=0.3)[0] == 'bbe'
    assert recommend(False, risk_matched_prior=None, bbe_prior=0.3)[0] == \
        'label_frequency'
    assert recommend(True, risk_matched_prior=None, bbe_prior=None)[0] == \
        'label_frequency'


def test_pseudo_complete_adds_only_detections_that_are_new_cells():
    labeled = [[0, 0, 10, 10]]
    detections = [[1, 0, 11, 10],    # IoU 0.82 with the labeled cell: the same cell
                  [6, 0, 16, 10],    # IoU 0.25: another cell
                  [50, 50, 60, 60]]  # far away: another cell
    bboxes, labels, added = pseudo_complete(labeled, [2], detections, [0, 1, 0])
    np.testing.assert_array_equal(bboxes, [[0, 0, 10, 10], [6, 0, 16, 10],
                                           [50, 50, 60, 60]])
    np.testing.assert_array_equal(labels, [2, 1, 0])  # the labeled cell keeps its class
    np.testing.assert_array_equal(added, [False, True, True])
    bboxes, labels, added = pseudo_complete(np.zeros((0, 4)), [], detections, [0, 0, 0])
    assert len(bboxes) == 3 and added.all()
    with pytest.raises(ValueError, match='as many labels as boxes'):
        pseudo_complete(labeled, [0, 1], detections, [0, 0, 0])


def _image(roi_labels, roi_is_gt, roi_scores, roi_pseudo, rpn_labeled, rpn_pseudo,
           labeled_cells, pseudo_cells, roi_oracle=None, rpn_oracle=None,
           complete_cells=None, roi_bg_ce=None):
    array = np.asarray
    return ImageSamples(
        roi_labels=array(roi_labels), roi_is_gt=array(roi_is_gt, bool),
        roi_scores=array(roi_scores, float).reshape(len(roi_labels), -1),
        roi_bg_ce=None if roi_bg_ce is None else array(roi_bg_ce, float),
        roi_pseudo=array(roi_pseudo), rpn_labeled=array(rpn_labeled, bool),
        rpn_pseudo=array(rpn_pseudo, bool), labeled_cells=array(labeled_cells),
        pseudo_cells=array(pseudo_cells),
        roi_oracle=None if roi_oracle is None else array(roi_oracle),
        rpn_oracle=None if rpn_oracle is None else array(rpn_oracle, bool),
        complete_cells=None if complete_cells is None else array(complete_cells))


def test_risk_matched_prior_leaves_the_negatives_risk():
    # 10 RoIs: 2 labeled (P), 2 unlabeled cells (U+), 6 negatives
    labels = np.array([0, 0] + [-1] * 8)
    assigned = np.array([0, 0, 0, 0] + [-1] * 6)
    h_bg = np.array([2.0, 2.0, 2.0, 2.0] + [0.1] * 6)
    # SCAR, P scores like U+: the share of cells
    (scar, ) = risk_matched_priors(h_bg, labels, assigned, 1)
    assert scar['prior'] == pytest.approx(0.4) and scar['share'] == pytest.approx(0.4)
    assert (scar['rho'], scar['h_p'], scar['h_u']) == (0.2, 2.0, 2.0)
    # a detector that has fitted P (H(c,bg) 4 against 2): rho + (share - rho) 2 / 4
    h_bg[:2] = 4.0
    (fitted, ) = risk_matched_priors(h_bg, labels, assigned, 1)
    assert fitted['prior'] == pytest.approx(0.2 + 0.2 * 2 / 4)
    # the losses' negative part at that prior is the negatives' own term, while the
    # share subtracts more than the positives contribute
    negatives = h_bg[4:].sum() / 10
    assert h_bg.mean() - fitted['prior'] * h_bg[:2].mean() == pytest.approx(negatives)
    assert h_bg.mean() - 0.4 * h_bg[:2].mean() < negatives
    # the naive approximation, E_x over U only: sum_U+ H / (|U| mean_P H)
    (naive, ) = risk_matched_priors(h_bg, labels, assigned, 1, estimator='unlabeled')
    assert naive['prior'] == pytest.approx(2 * 2.0 / (8 * 4.0))
    assert h_bg[2:].mean() - naive['prior'] * h_bg[:2].mean() == pytest.approx(
        h_bg[4:].sum() / 8)
    # no labeled RoI of a class, or labeled RoIs scored as background: no estimate
    none, = risk_matched_priors(h_bg, np.full(10, -1), assigned, 1)
    assert none['prior'] is None and 'n_p=0' in none['error']
    h_bg[:2] = 1e-3
    background, = risk_matched_priors(h_bg, labels, assigned, 1)
    assert background['prior'] is None and '>= 1' in background['error']


def test_estimates_count_the_shares_of_each_stage():
    images = [
        # RoIs: a labeled cell's box, a proposal on it, one on an unlabeled cell the
        # detector found, one on a cell it missed, background
        _image(roi_labels=[0, 0, -1, -1, -1], roi_is_gt=[1, 0, 0, 0, 0],
               roi_scores=[0.99, 0.9, 0.9, 0.3, 0.1], roi_pseudo=[0, 0, 0, -1, -1],
               roi_oracle=[0, 0, 0, 0, -1], roi_bg_ce=[4.6, 2.3, 2.3, 0.36, 0.1],
               rpn_labeled=[1, 0, 0, 0], rpn_pseudo=[1, 1, 0, 0], rpn_oracle=[1, 1, 1, 0],
               labeled_cells=[1], pseudo_cells=[2], complete_cells=[3]),
        _image(roi_labels=[-1, -1, -1], roi_is_gt=[0, 0, 0], roi_scores=[0.9, 0.1, 0.1],
               roi_pseudo=[0, -1, -1], roi_oracle=[0, -1, -1],
               roi_bg_ce=[2.3, 0.1, 0.1],
               rpn_labeled=[0, 0], rpn_pseudo=[0, 0], rpn_oracle=[0, 0],
               labeled_cells=[0], pseudo_cells=[1], complete_cells=[1]),
    ]
    result = estimate_priors(images, num_classes=1)
    roi, rpn = result['roi'], result['rpn']
    assert (roi['n'], roi['n_p'], roi['n_u']) == (8, [2], 6)
    assert roi['label_frequency']['priors'] == [pytest.approx(4 / 8)]
    assert roi['label_frequency']['c'] == [pytest.approx(1 / 3)]
    assert roi['oracle']['priors'] == [pytest.approx(5 / 8)]
    assert roi['oracle']['c_all'] == pytest.approx(1 / 4)
    # BBE: P = the proposal (0.9) without the labeled box; U has 2 of 6 at 0.9
    bbe = roi['bbe'][0]
    assert bbe['n_p'] == 1 and not bbe['p_includes_gt']
    assert bbe['alpha'] == pytest.approx(2 / 6) and bbe['z'] == pytest.approx(0.9)
    assert bbe['prior'] == pytest.approx((2 + 2) / 8)
    # risk-matched: P (4.6, 2.3) and the unlabeled RoIs on pseudo cells (2.3, 2.3) /
    # on complete cells (those and 0.36), over 8 RoIs in units of P's mean
    (matched, ), (matched_oracle, ) = roi['risk_matched'], roi['risk_matched_oracle']
    assert matched['prior'] == pytest.approx((6.9 + 4.6) / (8 * 3.45))
    assert matched_oracle['prior'] == pytest.approx((6.9 + 4.96) / (8 * 3.45))
    assert (rpn['n'], rpn['n_p'], rpn['n_u']) == (6, 1, 5)
    assert rpn['label_frequency']['prior'] == pytest.approx(2 / 6)
    assert rpn['oracle']['prior'] == pytest.approx(3 / 6)


def test_multi_class_estimates_and_missing_classes():
    images = [_image(roi_labels=[0, 1, -1, -1], roi_is_gt=[0, 0, 0, 0],
                     roi_scores=[[0.8, 0.1, 0.0], [0.1, 0.8, 0.0], [0.8, 0.1, 0.0],
                                 [0.1, 0.1, 0.0]],
                     roi_pseudo=[0, 1, 0, -1], rpn_labeled=[1], rpn_pseudo=[1],
                     labeled_cells=[1, 1, 0], pseudo_cells=[2, 1, 0])]
    result = estimate_priors(images, num_classes=3)
    roi = result['roi']
    assert roi['n_p'] == [1, 1, 0]
    assert roi['label_frequency']['priors'] == [0.5, 0.25, 0.0]
    assert roi['label_frequency']['c'] == [0.5, 1.0, None]
    # sigmoid scores (no H(c, bg)): cell score 1 - prod(1 - p), 0.82 for P and the first
    # unlabeled RoI, 0.19 for the second; half of U are cells, split 0.9 : 0.2 : 0
    assert roi['bbe'][0]['prior'] == pytest.approx((1 + 0.5 * 2 * 0.9 / 1.1) / 4)
    assert roi['bbe'][1]['prior'] == pytest.approx((1 + 0.5 * 2 * 0.2 / 1.1) / 4)
    assert roi['bbe'][0]['z'] == pytest.approx(0.82)
    assert roi['bbe'][2]['prior'] is None and 'n_p=0' in roi['bbe'][2]['error']
    assert roi['oracle'] is None and result['rpn']['oracle'] is None
    assert roi['risk_matched'] is None and roi['risk_matched_oracle'] is None
    with pytest.raises(ValueError, match='expected \\(K, 2\\)'):
        estimate_priors(images, num_classes=2)


def test_bbe_of_several_classes_splits_the_cells_of_any_class():
    # softmax scores (with H(c, bg)): P of three classes at cell score 0.75; U holds two
    # cells (0.75, mostly class 0) and two background RoIs (0.0625)
    scores = [[0.5, 0.25, 0.0], [0.25, 0.5, 0.0], [0.0, 0.25, 0.5],
              [0.75, 0.0, 0.0], [0.5, 0.25, 0.0], [0.0625, 0.0, 0.0], [0.0, 0.0625, 0.0]]
    images = [_image(roi_labels=[0, 1, 2, -1, -1, -1, -1], roi_is_gt=[0] * 7,
                     roi_scores=scores, roi_pseudo=[0, 1, 2, 0, 0, -1, -1],
                     roi_bg_ce=[0.1] * 7, rpn_labeled=[1], rpn_pseudo=[1],
                     labeled_cells=[1, 1, 1], pseudo_cells=[3, 1, 1])]
    bbe = estimate_priors(images, num_classes=3)['roi']['bbe']
    split = np.array([1.3125, 0.3125, 0.0]) / 1.625  # each class's probability mass over U
    assert [b['split'] for b in bbe] == pytest.approx(split)
    assert [b['prior'] for b in bbe] == pytest.approx((1 + 0.5 * 4 * split) / 7)
    # together the classes hold the cell-level estimate, (n_p + alpha n_u) / n
    assert sum(b['prior'] for b in bbe) == pytest.approx((3 + 0.5 * 4) / 7)
    assert {b['z'] for b in bbe} == {0.75}


RPN_TRAIN_CFG = ConfigDict(
    assigner=dict(type='MaxIoUAssigner', pos_iou_thr=0.7, neg_iou_thr=0.3,
                  min_pos_iou=0.3, match_low_quality=True, ignore_iof_thr=-1),
    sampler=dict(type='RandomSampler', num=256, pos_fraction=0.5, neg_pos_ub=-1,
                 add_gt_as_proposals=False),
    allowed_border=-1, pos_weight=-1, debug=False)


def _cells(boxes, labels=None):
    boxes = torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4)
    labels = torch.zeros(len(boxes), dtype=torch.long) if labels is None else \
        torch.tensor(labels)
    return InstanceData(bboxes=boxes, labels=labels)


def test_rpn_share_on_a_tiny_image_with_known_anchors():
    # 32 px image, one 16 px anchor per position of a stride-8 grid: 16 anchors centred
    # on (0, 8, 16, 24)^2
    head = RPNHead(in_channels=4, feat_channels=4, train_cfg=RPN_TRAIN_CFG,
                   anchor_generator=dict(type='AnchorGenerator', scales=[2],
                                         ratios=[1.0], strides=[8]))
    meta = dict(img_shape=(32, 32), pad_shape=(32, 32))
    anchors, valid = head.get_anchors([(4, 4)], [meta], device='cpu')
    anchors, valid = anchors[0][0], valid[0][0]
    assert anchors.shape == (16, 4)
    assert [8, 8, 24, 24] in anchors.tolist() and [0, 0, 16, 16] in anchors.tolist()

    labeled = _cells([[0, 0, 16, 16]])     # exactly the anchor centred on (8, 8)
    unlabeled = [[16, 16, 32, 32]]         # exactly the anchor centred on (24, 24)
    pseudo = _cells([[0, 0, 16, 16]] + unlabeled)
    torch.manual_seed(0)
    flags_labeled, flags_pseudo, flags_none = rpn_samples(
        head, anchors, valid, meta, labeled, None, [pseudo, None])
    # positive: the labeled cell's anchor; ignored (IoU 1/3 with it): its four
    # neighbours; sampled: the positive and the 11 negatives
    assert len(flags_labeled) == 12 and flags_labeled.sum() == 1
    # with the unlabeled cell its own anchor is positive too (its neighbours, IoU 1/3,
    # are not cells)
    assert flags_pseudo.sum() == 2 and flags_pseudo[flags_labeled].all()
    assert flags_none is None


def test_roi_samples_mark_labeled_boxes_and_pseudo_cells():
    init_default_scope('mmdet')
    roi_head = MODELS.build(ConfigDict(
        type='StandardRoIHead',
        bbox_roi_extractor=dict(type='SingleRoIExtractor',
                                roi_layer=dict(type='RoIAlign', output_size=7,
                                               sampling_ratio=0),
                                out_channels=8, featmap_strides=[4]),
        bbox_head=dict(type='Shared2FCBBoxHead', in_channels=8, fc_out_channels=16,
                       roi_feat_size=7, num_classes=2),
        train_cfg=dict(assigner=dict(type='MaxIoUAssigner', pos_iou_thr=0.5,
                                     neg_iou_thr=0.5, min_pos_iou=0.5,
                                     match_low_quality=False, ignore_iof_thr=-1),
                       sampler=dict(type='RandomSampler', num=16, pos_fraction=0.25,
                                    neg_pos_ub=-1, add_gt_as_proposals=True),
                       pos_weight=-1, debug=False)))
    feats = [torch.randn(1, 8, 16, 16)]
    labeled = _cells([[4, 4, 20, 20]], [1])
    proposals = InstanceData(bboxes=torch.tensor([
        [5., 4, 21, 20],      # on the labeled cell (IoU 0.89)
        [36, 36, 52, 52],     # on an unlabeled cell the detector found
        [40, 4, 56, 20]]))    # background
    pseudo = _cells([[4, 4, 20, 20], [36, 36, 52, 52]], [1, 0])
    labels, is_gt, scores, bg_ce, (pseudo_classes, ) = roi_samples(
        roi_head, feats, proposals, labeled, None, [pseudo])
    # sampled: the labeled box itself (added by the sampler), the proposal on it, the
    # two others
    assert sorted(labels.tolist()) == [-1, -1, 1, 1]
    assert is_gt.sum() == 1 and labels[is_gt].tolist() == [1]
    assert scores.shape == (4, 2) and (scores >= 0).all() and (scores.sum(1) <= 1).all()
    # the PU losses' H(c, bg): -log of the background probability, 1 - the class scores
    np.testing.assert_allclose(bg_ce, -np.log(1 - scores.sum(1)), rtol=1e-4)
    assert sorted(pseudo_classes.tolist()) == [-1, 0, 1, 1]
    assert (pseudo_classes[labels == 1] == 1).all()
