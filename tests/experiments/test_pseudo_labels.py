"""Pseudo-labels of self-training: the detections that are none of the labeled cells."""
import torch
from mmengine.structures import InstanceData

from mmdet_pu.experiments.pseudo_labels import new_cells


def test_confident_detections_that_are_no_labeled_cell_become_pseudo_labels():
    labeled = InstanceData(bboxes=torch.tensor([[0., 0., 10., 10.]]),
                           labels=torch.tensor([0]))
    detections = InstanceData(
        bboxes=torch.tensor([[1., 1., 10., 10.],     # the labeled cell again
                             [30., 30., 40., 42.],   # a new cell
                             [50., 50., 60., 60.],   # below the score threshold
                             [4., 0., 14., 10.]]),   # overlaps the labeled cell, IoU 0.43
        labels=torch.tensor([0, 1, 0, 0]), scores=torch.tensor([0.9, 0.8, 0.4, 0.7]))
    found = new_cells(labeled, detections, score_thr=0.5)
    assert found.tolist() == [[30, 30, 40, 42, 1], [4, 0, 14, 10, 0]]
    none = new_cells(labeled, detections, score_thr=0.95)
    assert none.shape == (0, 5)
