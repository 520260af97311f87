"""Fusion of several detectors' detections (mmdet_pu.models.detectors): the cluster
rule on hand-made boxes, and FusedEnsemble on a real slim Faster R-CNN."""
import pytest
import torch
from mmdet.registry import MODELS
from mmdet.structures import DetDataSample
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmengine.runner import load_checkpoint

from mmdet_pu.apis.slide_model import classifier_classes, init_slide_model
from mmdet_pu.models.detectors import FusedEnsemble, fuse_detections
from mmdet_pu.models.detectors.box_fusion import threshold_exponent
from mmdet_pu.workflow.fused_ensemble import (MEMBER_SCORE_FLOOR, ensemble_config,
                                              write_ensemble_checkpoint)
from tests._data import make_tiny_coco, pu_model_extra, write_tiny_config


def t(values):
    return torch.tensor(values, dtype=torch.float32)


def labels(*values):
    return torch.tensor(values, dtype=torch.long)


def test_a_cell_found_by_every_member_keeps_their_mean_score_and_weighted_box():
    boxes, scores, found = fuse_detections(
        [t([[0, 0, 10, 10]]), t([[1, 0, 11, 10]])], [t([0.9]), t([0.6])],
        [labels(0), labels(0)])
    assert found.tolist() == [0]
    assert scores.tolist() == pytest.approx([0.75])
    assert boxes[0].tolist() == pytest.approx([0.4, 0, 10.4, 10])  # (0.9*0 + 0.6*1) / 1.5


def test_a_detection_of_one_member_keeps_its_share_of_the_vote():
    boxes, scores, _ = fuse_detections(
        [t([[0, 0, 10, 10], [50, 50, 60, 60]]), t([[0, 0, 10, 10]]), t([[0, 0, 10, 10]])],
        [t([0.6, 0.9]), t([0.6]), t([0.6])], [labels(0, 0), labels(0), labels(0)])
    # the look-alike one member scores 0.9 now ranks below the cell all three find
    assert scores.tolist() == pytest.approx([0.6, 0.3])
    assert boxes.tolist() == [pytest.approx([0, 0, 10, 10]), pytest.approx([50, 50, 60, 60])]


def test_a_member_votes_once_per_cluster_and_classes_never_mix():
    boxes, scores, found = fuse_detections(
        [t([[0, 0, 10, 10], [0, 0, 10, 9], [0, 0, 10, 10]]), t([[0, 0, 10, 10]])],
        [t([0.8, 0.7, 0.9]), t([0.4])], [labels(0, 0, 1), labels(0)])
    # class 0: member 0's best (0.8) and member 1's 0.4; class 1: member 0 alone
    assert found.tolist() == [0, 1]
    assert scores.tolist() == pytest.approx([0.6, 0.45])


def test_clusters_are_formed_class_by_class_as_one_greedy_pass_would(monkeypatch):
    # interleaved classes in descending score: the clusters and their order are those
    # of one pass over all detections, while the IoUs are computed per class only
    import mmdet_pu.models.detectors.box_fusion as box_fusion
    sizes = []
    overlaps = box_fusion.bbox_overlaps
    monkeypatch.setattr(box_fusion, 'bbox_overlaps',
                        lambda a, b: sizes.append(len(a)) or overlaps(a, b))
    boxes = t([[0, 0, 10, 10], [0, 0, 10, 10], [1, 0, 11, 10], [40, 0, 50, 10],
               [1, 0, 11, 10]])
    cluster, heads = box_fusion.greedy_clusters(boxes, labels(0, 1, 0, 0, 1), 0.55)
    assert cluster.tolist() == [0, 1, 0, 2, 1] and heads.tolist() == [0, 1, 3]
    assert sorted(sizes) == [2, 3]  # 3 of class 0, 2 of class 1; never all 5 together


def test_the_cluster_forms_around_its_best_detection():
    # IoU(A, B) = 0.6 and IoU(B, C) = 0.6 but IoU(A, C) < 0.55: C is its own cluster
    a, b, c = [0, 0, 10, 10], [0, 0, 10, 16], [0, 6, 10, 16]
    _, scores, _ = fuse_detections([t([a]), t([b]), t([c])], [t([0.9]), t([0.8]), t([0.7])],
                                   [labels(0)] * 3, iou_thr=0.55)
    assert scores.tolist() == pytest.approx([1.7 / 3, 0.7 / 3])


def test_weighted_members_vote_with_their_share_for_score_and_box():
    # the second member has three times the first's weight: shares 1/4 and 3/4
    boxes, scores, _ = fuse_detections(
        [t([[0, 0, 10, 10], [50, 50, 60, 60]]), t([[2, 0, 12, 10]])],
        [t([0.8, 0.9]), t([0.4])], [labels(0, 0), labels(0)], weights=[1, 3])
    assert scores.tolist() == pytest.approx([0.5, 0.225])  # 0.8/4 + 3*0.4/4; 0.9/4
    # box weights w_m * s_d: 0.8 * 1 and 0.4 * 3
    assert boxes[0].tolist() == pytest.approx([1.2, 0, 11.2, 10])
    same = fuse_detections([t([[0, 0, 10, 10]])] * 2, [t([0.6]), t([0.2])],
                           [labels(0)] * 2, weights=[2, 2])[1]
    assert same.tolist() == pytest.approx([0.4])  # equal weights: the mean
    with pytest.raises(ValueError, match=r'expected 2 weights >= 0, not all 0, got \[1.0\]'):
        fuse_detections([t([[0, 0, 1, 1]])] * 2, [t([1])] * 2, [labels(0)] * 2,
                        weights=[1])
    with pytest.raises(ValueError, match='expected 2 weights >= 0'):
        fuse_detections([t([[0, 0, 1, 1]])] * 2, [t([1])] * 2, [labels(0)] * 2,
                        weights=[1, -1])


def test_per_class_weights_take_each_class_from_the_members_that_vote_for_it():
    member_a = (t([[0, 0, 10, 10], [20, 20, 30, 30]]), t([0.9, 0.8]), labels(0, 1))
    member_b = (t([[1, 0, 11, 10], [21, 20, 31, 30]]), t([0.3, 0.2]), labels(0, 1))
    boxes, scores, found = fuse_detections(
        *zip(member_a, member_b), weights=[[1, 0], [0, 2]])
    # class 0 is member a's alone, class 1 member b's alone (its weight normalised to 1)
    assert found.tolist() == [0, 1]
    assert scores.tolist() == pytest.approx([0.9, 0.2])
    assert boxes.tolist() == [pytest.approx([0, 0, 10, 10]), pytest.approx([21, 20, 31, 30])]
    # a class both vote for fuses at that class's shares
    _, shared, _ = fuse_detections(*zip(member_a, member_b), weights=[[1, 3], [1, 1]])
    assert sorted(shared.tolist()) == pytest.approx(sorted([0.6, 0.8 * 0.75 + 0.2 * 0.25]))


def test_score_exponents_move_a_members_scores_and_keep_their_order():
    scores = t([0.04, 0.2, 0.09])
    boxes = t([[0, 0, 10, 10], [20, 0, 30, 10], [40, 0, 50, 10]])
    exponent = threshold_exponent(0.09)  # the member's threshold 0.09 reads 0.5
    _, mapped, _ = fuse_detections([boxes], [scores], [labels(0, 0, 0)],
                                   score_exponents=[[exponent]])
    assert mapped.tolist() == pytest.approx(sorted((scores ** exponent).tolist(),
                                                   reverse=True))
    assert 0.09 ** exponent == pytest.approx(0.5)
    with pytest.raises(ValueError, match=r'expected a threshold in \(0, 1\), got 1'):
        threshold_exponent(1)


def test_bad_per_class_weights_and_exponents():
    one = ([t([[0, 0, 1, 1]])] * 2, [t([1])] * 2, [labels(1)] * 2)
    with pytest.raises(ValueError, match=r'class 1: expected weights >= 0, not all 0'):
        fuse_detections(*one, weights=[[1, 0], [1, 0]])
    with pytest.raises(ValueError, match='one list per member, all of one length'):
        fuse_detections(*one, weights=[[1, 1], [1]])
    with pytest.raises(ValueError, match='given for 1 classes, got a detection of class 1'):
        fuse_detections(*one, weights=[[1], [1]], score_exponents=[[1.0], [2.0]])
    with pytest.raises(ValueError, match='expected exponents > 0'):
        fuse_detections(*one, score_exponents=[[1.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match='weights for 2 classes but score exponents for 3'):
        fuse_detections(*one, weights=[[1, 1], [1, 1]],
                        score_exponents=[[1, 1, 1], [1, 1, 1]])


def test_no_detection_and_bad_arguments():
    boxes, scores, found = fuse_detections([torch.zeros(0, 4)] * 2, [torch.zeros(0)] * 2,
                                           [torch.zeros(0, dtype=torch.long)] * 2)
    assert boxes.shape == (0, 4) and scores.shape == (0,) and found.shape == (0,)
    with pytest.raises(ValueError, match=r'iou_thr must be in \(0, 1\), got 1'):
        fuse_detections([t([[0, 0, 1, 1]])], [t([1])], [labels(0)], iou_thr=1)
    with pytest.raises(ValueError, match='one boxes, scores and labels tensor per member'):
        fuse_detections([t([[0, 0, 1, 1]])], [], [labels(0)])


@pytest.fixture(scope='module')
def tiny(module_tmp_path):
    init_default_scope('mmdet')
    root = module_tmp_path
    make_tiny_coco(root / 'data', n_images=1, size=128)
    cfg = Config.fromfile(write_tiny_config(root / 'tiny.py', root / 'data'))
    cfg.model.test_cfg.rcnn.score_thr = 0.0  # an untrained head's scores are low
    return root, cfg


def _batch(model, size=128):
    sample = DetDataSample(metainfo=dict(img_shape=(size, size), ori_shape=(size, size),
                                         scale_factor=(1.0, 1.0)))
    torch.manual_seed(0)
    image = torch.randint(0, 255, (3, size, size), dtype=torch.uint8)
    return model.data_preprocessor(dict(inputs=[image], data_samples=[sample]), False)


def test_identical_members_predict_what_one_member_does(tiny):
    root, cfg = tiny
    torch.manual_seed(0)
    single = MODELS.build(cfg.model).eval()
    ensemble = MODELS.build(dict(type='FusedEnsemble', detector=cfg.model,
                                 num_members=2)).eval()
    for member in ensemble.members:
        member.load_state_dict(single.state_dict())
    data = _batch(single)
    with torch.no_grad():
        expected = single.predict(data['inputs'], data['data_samples'])[0].pred_instances
        expected = {k: v.clone() for k, v in expected.items()}
        fused = ensemble.predict(data['inputs'], data['data_samples'])[0].pred_instances
    assert len(expected['scores']) > 0
    order = torch.argsort(expected['scores'], descending=True, stable=True)
    assert torch.allclose(fused.scores, expected['scores'][order])
    assert torch.allclose(fused.bboxes, expected['bboxes'][order])
    with pytest.raises(RuntimeError, match='FusedEnsemble does not train'):
        ensemble.loss(data['inputs'], data['data_samples'])
    with pytest.raises(ValueError, match='num_members must be an integer >= 1, got 0'):
        FusedEnsemble(detector=cfg.model, num_members=0)
    with pytest.raises(ValueError, match='expected 2 weights >= 0, not all 0'):
        FusedEnsemble(detector=cfg.model, num_members=2, weights=[0, 0])


def test_the_checkpoint_holds_every_member_and_loads_for_tests_and_slides(tiny):
    root, cfg = tiny
    paths = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        model = MODELS.build(cfg.model)
        paths.append(str(root / f'member{seed}.pth'))
        torch.save(dict(state_dict=model.state_dict(),
                        meta=dict(dataset_meta=dict(classes=(f'cell{seed}', )))),
                   paths[-1])
    write_ensemble_checkpoint(paths, str(root / 'fused.pth'))
    member_config = root / 'member.py'
    cfg.dump(str(member_config))
    ensemble = MODELS.build(ensemble_config(str(member_config), 2).model)
    meta = load_checkpoint(ensemble, str(root / 'fused.pth'), map_location='cpu',
                           strict=True)['meta']
    assert meta['members'] == paths
    assert meta['dataset_meta'] == dict(classes=('cell0', ))  # the first member's
    assert classifier_classes(ensemble_config(str(member_config), 2).model) == (
        1, 'model.roi_head.bbox_head.num_classes')
    # the member keeps every score, the fused detector's members mmdet's 0.05
    assert cfg.model.test_cfg.rcnn.score_thr == 0
    assert ensemble_config(str(member_config), 2).model.detector.test_cfg.rcnn.score_thr \
        == MEMBER_SCORE_FLOOR == 0.05
    for member, path in zip(ensemble.members, paths):
        state = torch.load(path, weights_only=False)['state_dict']
        assert all(torch.equal(v, state[k]) for k, v in member.state_dict().items())
    assert not torch.equal(ensemble.members[0].backbone.conv1.weight,
                           ensemble.members[1].backbone.conv1.weight)
    # what tools/infer_slide.py loads: the written config and checkpoint, every member
    fused_config = root / 'fused_config.py'
    ensemble_config(str(member_config), 2).dump(str(fused_config))
    slide_model = init_slide_model(fused_config, root / 'fused.pth', device='cpu')
    assert isinstance(slide_model, FusedEnsemble)
    assert len(slide_model.dataset_meta['classes']) == 1
    for member, path in zip(slide_model.members, paths):
        state = torch.load(path, weights_only=False)['state_dict']
        assert all(torch.equal(v, state[k]) for k, v in member.state_dict().items())


def test_a_member_trained_with_its_own_loss_joins_a_pu_ensemble(tiny, tmp_path):
    """``--self-train-loss own`` with the fused default: the round's checkpoint has no
    PU prior buffers, the ensemble is built from a PU config; the runner's non-strict
    load leaves only those buffers out, and every member predicts with its weights."""
    root, cfg = tiny
    pu_config = write_tiny_config(tmp_path / 'pu.py', root / 'data',
                                  extra=pu_model_extra(0.05, 0.3))
    pu_model = Config.fromfile(pu_config).model
    paths = []
    for index, model_cfg in enumerate((pu_model, cfg.model)):  # PU, then own loss
        torch.manual_seed(index)
        paths.append(str(tmp_path / f'member{index}.pth'))
        torch.save(dict(state_dict=MODELS.build(model_cfg).state_dict()), paths[-1])
    write_ensemble_checkpoint(paths, str(tmp_path / 'fused.pth'))
    ensemble_cfg = ensemble_config(pu_config, 2, weights=[1, 1])
    ensemble_cfg.model.detector.test_cfg.rcnn.score_thr = 0.0
    ensemble = MODELS.build(ensemble_cfg.model).eval()
    load_checkpoint(ensemble, str(tmp_path / 'fused.pth'), map_location='cpu',
                    strict=False, logger='silent')
    own = torch.load(paths[1], weights_only=False)['state_dict']
    assert all(torch.equal(v, own[k]) for k, v in ensemble.members[1].state_dict().items()
               if k in own)
    assert {k for k in ensemble.members[1].state_dict() if k not in own} == {
        'rpn_head.loss_cls.prior', 'roi_head.bbox_head.loss_cls.prior'}
    data = _batch(ensemble.members[0])
    with torch.no_grad():
        fused = ensemble.predict(data['inputs'], data['data_samples'])[0].pred_instances
    assert len(fused.scores) > 0
