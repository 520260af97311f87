"""Pseudo-labels of self-training: the detections that are none of the labeled cells,
and the uncertain ones the round ignores."""
from pathlib import Path

import pytest
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmengine.structures import InstanceData

from mmdet.registry import TASK_UTILS
from mmdet_pu.engine.launch import parse_cfg_options
from mmdet_pu.workflow.pseudo_labels import ignore_options, new_cells

REPO = Path(__file__).resolve().parents[2]


def test_confident_detections_that_are_no_labeled_cell_become_pseudo_labels():
    labeled = InstanceData(bboxes=torch.tensor([[0., 0., 10., 10.]]),
                           labels=torch.tensor([0]))
    detections = InstanceData(
        bboxes=torch.tensor([[1., 1., 10., 10.],     # the labeled cell again
                             [30., 30., 40., 42.],   # a new cell
                             [50., 50., 60., 60.],   # below the score threshold
                             [4., 0., 14., 10.]]),   # overlaps the labeled cell, IoU 0.43
        labels=torch.tensor([0, 1, 0, 0]), scores=torch.tensor([0.9, 0.8, 0.4, 0.7]))
    found, scores = new_cells(labeled, detections, score_thr=0.5)
    assert found.tolist() == [[30, 30, 40, 42, 1], [4, 0, 14, 10, 0]]
    assert scores.tolist() == pytest.approx([0.8, 0.7])
    none, scores = new_cells(labeled, detections, score_thr=0.95)
    assert none.shape == (0, 5) and scores.shape == (0,)


def test_the_scores_of_new_cells_split_pseudo_labels_from_the_uncertain_band():
    labeled = InstanceData(bboxes=torch.tensor([[0., 0., 10., 10.]]),
                           labels=torch.tensor([0]))
    detections = InstanceData(
        bboxes=torch.tensor([[1., 1., 10., 10.],     # the labeled cell, score in the band
                             [30., 30., 40., 42.],   # a pseudo-label
                             [50., 50., 60., 60.],   # uncertain
                             [70., 70., 80., 80.]]),  # below the band
        labels=torch.tensor([0, 0, 0, 0]), scores=torch.tensor([0.3, 0.8, 0.4, 0.05]))
    found, scores = new_cells(labeled, detections, 0.1)
    assert found.tolist() == [[30, 30, 40, 42, 0], [50, 50, 60, 60, 0]]
    assert found[scores >= 0.5].tolist() == [[30, 30, 40, 42, 0]]
    assert found[scores < 0.5].tolist() == [[50, 50, 60, 60, 0]]


def test_boxes_without_width_or_height_are_no_cells():
    # a detector clips its boxes to the image: one beyond the border x = 200 becomes a
    # line there (the file's own 0.01 px decides), which no dataset reads as a cell
    labeled = InstanceData(bboxes=torch.zeros((0, 4)), labels=torch.zeros(0).long())
    detections = InstanceData(
        bboxes=torch.tensor([[200., 178.63, 200., 189.46],   # clipped to a line
                             [190., 10., 200.001, 20.],       # a cell at the border
                             [50., 50., 50.004, 60.],         # 0.004 px wide
                             [30.123, 30., 40.456, 42.]]),
        labels=torch.tensor([0, 0, 0, 0]), scores=torch.tensor([0.9, 0.8, 0.7, 0.6]))
    found, scores = new_cells(labeled, detections, 0.1)
    assert found.tolist() == [[190, 10, 200, 20, 0], [30.12, 30, 40.46, 42, 0]]
    assert scores.tolist() == pytest.approx([0.8, 0.6])


def _faster_rcnn_train_cfg():
    cfg = Config.fromfile(str(REPO / 'configs/real/mnfinder_keep1_pu.py'))
    return cfg.model.train_cfg


def test_ignore_options_reach_every_assigner_that_can_ignore():
    assert ignore_options(_faster_rcnn_train_cfg()) == [
        'model.train_cfg.rpn.assigner.ignore_iof_thr=0.5',
        'model.train_cfg.rcnn.assigner.ignore_iof_thr=0.5']
    cascade = Config.fromfile(str(REPO / 'configs/real/mnfinder_cascade-rcnn_keep1_pu.py'))
    assert ignore_options(cascade.model.train_cfg)[1:] == [
        f'model.train_cfg.rcnn.{i}.assigner.ignore_iof_thr=0.5' for i in range(3)]
    atss = Config.fromfile(str(REPO / 'configs/real/mnfinder_atss_keep1_pu.py'))
    assert ignore_options(atss.model.train_cfg) == [
        'model.train_cfg.assigner.ignore_iof_thr=0.5']
    rtmdet = Config.fromfile(str(REPO / 'configs/real/mnfinder_rtmdet_keep1_pu.py'))
    assert ignore_options(rtmdet.model.train_cfg) == []  # DynamicSoftLabelAssigner


def test_the_options_make_the_assigner_leave_samples_inside_uncertain_boxes_out():
    """With the options merged, mmdet's assigner marks a proposal inside an uncertain
    detection -1 (neither positive nor negative); without them it is a negative."""
    init_default_scope('mmdet')
    cfg = Config(dict(model=dict(train_cfg=_faster_rcnn_train_cfg())))
    cfg.merge_from_dict(parse_cfg_options(ignore_options(cfg.model.train_cfg)))
    proposals = InstanceData(priors=torch.tensor([[0., 0., 10., 10.],      # the cell
                                                  [41., 41., 50., 50.],    # uncertain
                                                  [100., 100., 110., 110.]]))  # background
    cells = InstanceData(bboxes=torch.tensor([[0., 0., 10., 10.]]), labels=torch.tensor([0]))
    uncertain = InstanceData(bboxes=torch.tensor([[40., 40., 52., 52.]]),
                             labels=torch.tensor([0]))
    for stage in ('rpn', 'rcnn'):
        with_options = TASK_UTILS.build(cfg.model.train_cfg[stage].assigner)
        plain = TASK_UTILS.build(_faster_rcnn_train_cfg()[stage].assigner)
        assert with_options.assign(proposals, cells, uncertain).gt_inds.tolist() == \
            [1, -1, 0]
        assert plain.assign(proposals, cells, uncertain).gt_inds.tolist() == [1, 0, 0]
