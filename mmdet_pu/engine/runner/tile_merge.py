"""Tiling of a whole image for inference and merging of the per-tile detections (SPEC §6).

Large images are predicted patch by patch; the boxes are shifted back to image
coordinates and the duplicates of cells seen by two overlapping tiles are removed with
class-wise NMS (Section 3.1.1: "mapped back into the image ... removed with NMS").
"""
from typing import List, Sequence, Tuple

import torch
from mmcv.ops import batched_nms
from mmengine.structures import InstanceData


def tile_origins(length: int, tile: int, overlap: int) -> List[int]:
    """Start offsets of tiles of size ``tile`` covering ``[0, length)``.

    Tiles advance by ``tile - overlap``; the last one is moved back to end flush with
    ``length`` (the same convention as ``data_prep``'s tiling, so test-time tiles are the
    training patches). ``length <= tile`` gives ``[0]``.
    """
    if tile <= 0:
        raise ValueError(f'tile_size must be positive, got {tile}')
    if not 0 <= overlap < tile:
        raise ValueError(f'overlap must be in [0, tile_size={tile}), got {overlap}')
    if length <= tile:
        return [0]
    origins = list(range(0, length - tile, tile - overlap))
    origins.append(length - tile)
    return origins


def tile_windows(height: int, width: int, tile: int,
                 overlap: int) -> List[Tuple[int, int, int, int]]:
    """Windows ``(x0, y0, w, h)`` covering a ``height x width`` image, row by row."""
    return [(x0, y0, min(tile, width), min(tile, height))
            for y0 in tile_origins(height, tile, overlap)
            for x0 in tile_origins(width, tile, overlap)]


def merge_tile_predictions(tile_preds: Sequence[InstanceData],
                           offsets: Sequence[Tuple[float, float]],
                           nms_iou: float = 0.3,
                           max_per_img: int = -1) -> InstanceData:
    """Shift per-tile detections into image coordinates and remove duplicates.

    Args:
        tile_preds: per tile, ``InstanceData`` with ``bboxes`` (K, 4) in tile
            coordinates, ``scores`` (K,) and ``labels`` (K,).
        offsets: per tile, ``(x0, y0)`` of the tile in image coordinates.
        nms_iou: IoU threshold of the class-wise NMS over all tiles.
        max_per_img: keep at most this many detections (highest scores); ``-1`` keeps
            all (the model's ``test_cfg`` already caps each tile).

    Returns:
        ``InstanceData`` with ``bboxes``, ``scores`` and ``labels`` sorted by descending
        score.
    """
    if len(tile_preds) != len(offsets):
        raise ValueError(f'{len(tile_preds)} tile predictions but {len(offsets)} offsets')
    if not tile_preds:
        raise ValueError('merge_tile_predictions needs at least one tile')
    bboxes, scores, labels = [], [], []
    for pred, (x0, y0) in zip(tile_preds, offsets):
        shift = pred.bboxes.new_tensor([x0, y0, x0, y0])
        bboxes.append(pred.bboxes + shift)
        scores.append(pred.scores)
        labels.append(pred.labels)
    bboxes, scores, labels = torch.cat(bboxes), torch.cat(scores), torch.cat(labels)

    merged = InstanceData()
    if bboxes.numel() == 0:
        merged.bboxes, merged.scores, merged.labels = bboxes, scores, labels
        return merged
    dets, keep = batched_nms(bboxes, scores, labels,
                             dict(type='nms', iou_threshold=nms_iou))
    if max_per_img > 0:
        dets, keep = dets[:max_per_img], keep[:max_per_img]
    merged.bboxes = dets[:, :4]
    merged.scores = dets[:, 4]
    merged.labels = labels[keep]
    return merged
