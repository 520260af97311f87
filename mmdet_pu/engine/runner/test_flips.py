"""Test-time flips: every tile predicted as is and mirrored, the views' detections fused
(docs/method.md#test-time-flips).

A detector trained on few labels ranks the cells with much variance: a mirrored tile
gives other scores for the same cells. With ``flips`` the tiled loops predict each tile
as is and flipped in each of the given directions (mmdet's ``'horizontal'``,
``'vertical'``, ``'diagonal'``: both axes), flip each view's boxes back, merge each
view's tiles as one detector's and fuse the views' whole-image detections with the
fused ensemble's rule (:func:`~mmdet_pu.models.detectors.box_fusion.fuse_detections`,
equal votes, IoU 0.55): a cell found in every view keeps its mean score, a look-alike
one view finds keeps a share of it. mmdet's own ``DetTTAModel`` merges augmented views
by NMS, which keeps the best score of a cluster instead of voting, and it predicts whole
images, not the loops' tiles.
"""
from typing import Sequence, Tuple

import torch
from mmdet.structures.bbox import bbox_flip
from mmengine.structures import InstanceData


#: The flips of ``tools/test.py --tta``: with the tile as is, its four orientations.
TTA_FLIPS = ('horizontal', 'vertical', 'diagonal')
_FLIP_DIMS = {'horizontal': (-1, ), 'vertical': (-2, ), 'diagonal': (-2, -1)}


def check_flips(flips: Sequence[str], owner: str) -> Tuple[str, ...]:
    """``flips`` as a tuple, each a direction of :data:`TTA_FLIPS`, none twice."""
    flips = tuple(flips)
    unknown = [f for f in flips if f not in _FLIP_DIMS]
    if unknown or len(set(flips)) != len(flips):
        raise ValueError(f'{owner}: flips must be distinct directions among '
                         f'{list(_FLIP_DIMS)}, got {list(flips)}')
    return flips


def flip_tile(tile: torch.Tensor, direction: str) -> torch.Tensor:
    """A ``(C, H, W)`` tile mirrored in ``direction``."""
    return torch.flip(tile, _FLIP_DIMS[direction])


def flip_back(pred: InstanceData, direction: str, height: float,
              width: float) -> InstanceData:
    """Detections of a tile mirrored in ``direction`` (its ``height`` x ``width`` in the
    boxes' pixels) moved, in place, to the tile as it is; a flip is its own inverse."""
    pred.bboxes = bbox_flip(pred.bboxes, (height, width), direction)
    return pred
