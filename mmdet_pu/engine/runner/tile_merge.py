"""Merging of the per-tile detections of a whole image (docs/method.md#tiled-inference).

Large images are predicted patch by patch; the boxes are shifted back to image
coordinates and the duplicates of cells seen by two overlapping tiles are removed with
NMS, class-wise by default (Section 3.1.1: "mapped back into the image ... removed
with NMS").

Before the NMS, each tile keeps only the detections centred in its *core*
(:func:`tile_cores`): the part of the tile nearer to its middle than to a neighbour's,
i.e. the tile less half the overlap along every edge shared with another tile. A cell
cut by a tile's edge is seen whole by the neighbour, and the cut part's box, whose
centre lies within half the cell of that edge, is dropped instead of competing in the
NMS, where a partial box overlapping the whole one by less than the NMS threshold would
survive as a false positive (docs/experiments.md, "Tile borders"). This needs an
overlap of at least the largest cell; with no overlap the cores are the tiles and
nothing is dropped.

A whole slide holds too many cells for one NMS (its cost is quadratic in their number):
:func:`merge_slide_detections` applies the same NMS region by region
(``mmdet_pu.apis.slide``, docs/slides.md), and :func:`fuse_slide_detections` fuses an
ensemble's merged slide detections the same way.
"""
import math
from collections import defaultdict
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from mmcv.ops import batched_nms
from mmengine.structures import InstanceData

from ...models.detectors.box_fusion import fuse_instances


def _span_cores(spans: List[Tuple[int, int]]) -> Dict[int, Tuple[float, float]]:
    """Per start, the ``[low, high)`` core of each span ``(start, length)`` of one line.

    A boundary shared with an overlapping neighbour lies in the middle of the overlap;
    an edge without one is unbounded.
    """
    spans = sorted(spans)
    cores = {}
    for i, (start, length) in enumerate(spans):
        low, high = -math.inf, math.inf
        if i > 0 and spans[i - 1][0] + spans[i - 1][1] > start:
            low = (start + spans[i - 1][0] + spans[i - 1][1]) / 2
        if i + 1 < len(spans) and start + length > spans[i + 1][0]:
            high = (spans[i + 1][0] + start + length) / 2
        cores[start] = (low, high)
    return cores


def tile_cores(windows: Sequence[Tuple[int, int, int, int]]
               ) -> List[Tuple[float, float, float, float]]:
    """The core ``(x_low, y_low, x_high, y_high)`` of every window of a tile grid.

    ``windows`` are ``(x0, y0, w, h)`` on a grid (those of
    :func:`~cellio.tiling.window_grid`, or a
    subset of them, e.g. the tissue tiles of a slide). A window's neighbours are the
    next windows of its row (same ``y0``) and of its column (same ``x0``); each shared
    overlap is split in its middle. Where a neighbour is absent the core extends past
    the window. A point of the windows lies in one core of a whole grid, and in at least
    one when windows are missing (their neighbours keep the cut cells no tile sees whole).
    """
    rows, cols = defaultdict(list), defaultdict(list)
    for x0, y0, w, h in windows:
        rows[y0].append((x0, w))
        cols[x0].append((y0, h))
    row_cores = {y0: _span_cores(spans) for y0, spans in rows.items()}
    col_cores = {x0: _span_cores(spans) for x0, spans in cols.items()}
    cores = []
    for x0, y0, _, _ in windows:
        (x_low, x_high), (y_low, y_high) = row_cores[y0][x0], col_cores[x0][y0]
        cores.append((x_low, y_low, x_high, y_high))
    return cores


def in_core(bboxes: torch.Tensor, core: Tuple[float, float, float, float]) -> torch.Tensor:
    """Which of ``bboxes`` (K, 4) have their centre in ``core`` (same coordinates)."""
    cx = (bboxes[:, 0] + bboxes[:, 2]) / 2
    cy = (bboxes[:, 1] + bboxes[:, 3]) / 2
    x_low, y_low, x_high, y_high = core
    return (cx >= x_low) & (cx < x_high) & (cy >= y_low) & (cy < y_high)


def merge_tile_predictions(tile_preds: Sequence[InstanceData],
                           offsets: Sequence[Tuple[float, float]],
                           nms_iou: float = 0.3,
                           class_agnostic: bool = False,
                           max_per_img: int = -1,
                           cores: Optional[Sequence[Tuple[float, float, float, float]]]
                           = None) -> InstanceData:
    """Shift per-tile detections into image coordinates and remove duplicates.

    Args:
        tile_preds: per tile, ``InstanceData`` with ``bboxes`` (K, 4) in tile
            coordinates, ``scores`` (K,) and ``labels`` (K,).
        offsets: per tile, ``(x0, y0)`` of the tile in image coordinates.
        nms_iou: IoU threshold of the NMS over all tiles.
        class_agnostic: one NMS over all classes instead of one per class.
        max_per_img: keep at most this many detections (highest scores); ``-1`` keeps
            all (the model's ``test_cfg`` already caps each tile).
        cores: per tile, its core in image coordinates (:func:`tile_cores`); the
            tile's detections centred outside it are dropped before the NMS. ``None``
            keeps every detection.

    Returns:
        ``InstanceData`` with ``bboxes``, ``scores`` and ``labels`` sorted by descending
        score.
    """
    if len(tile_preds) != len(offsets):
        raise ValueError(f'{len(tile_preds)} tile predictions but {len(offsets)} offsets')
    if not tile_preds:
        raise ValueError('merge_tile_predictions needs at least one tile')
    if cores is not None and len(cores) != len(offsets):
        raise ValueError(f'{len(cores)} tile cores but {len(offsets)} offsets')
    bboxes, scores, labels = [], [], []
    for i, (pred, (x0, y0)) in enumerate(zip(tile_preds, offsets)):
        boxes = pred.bboxes + pred.bboxes.new_tensor([x0, y0, x0, y0])
        keep = in_core(boxes, cores[i]) if cores is not None else slice(None)
        bboxes.append(boxes[keep])
        scores.append(pred.scores[keep])
        labels.append(pred.labels[keep])
    bboxes, scores, labels = torch.cat(bboxes), torch.cat(scores), torch.cat(labels)

    merged = InstanceData()
    if bboxes.numel() == 0:
        merged.bboxes, merged.scores, merged.labels = bboxes, scores, labels
        return merged
    dets, keep = batched_nms(bboxes, scores, labels,
                             dict(type='nms', iou_threshold=nms_iou),
                             class_agnostic=class_agnostic)
    if max_per_img > 0:
        dets, keep = dets[:max_per_img], keep[:max_per_img]
    merged.bboxes = dets[:, :4]
    merged.scores = dets[:, 4]
    merged.labels = labels[keep]
    return merged


def merge_slide_detections(bboxes, scores, labels, nms_iou=0.3, class_agnostic=False,
                           region=1024):
    """NMS of a whole slide's tile detections, region by region.

    One NMS over all the cells of a slide costs time quadratic in their number. Here
    each detection belongs to the ``region`` x ``region`` square that holds its centre;
    the detections of every square and its 8 neighbours go through
    :func:`merge_tile_predictions` together, and the survivors that belong to the square
    are kept (:func:`_by_region`). Squares are at least twice as large as the largest
    box, so every box that could suppress a kept one, and every box that could suppress
    that one, is among the candidates: the result equals one NMS over the slide unless a
    chain of suppressions runs over more than a square.

    Args:
        bboxes: (N, 4) ``x0, y0, x1, y1``; scores: (N,); labels: (N,) int.
        nms_iou: IoU threshold of the NMS.
        class_agnostic: one NMS over all classes instead of one per class.
        region: side of the squares, in the boxes' pixels.

    Returns:
        ``(bboxes, scores, labels)`` of the kept detections, by descending score.
    """
    detections = _as_arrays(bboxes, scores, labels)

    def merge(candidates):
        (boxes, scores, labels), = candidates
        return merge_tile_predictions([_instances(boxes, scores, labels)], [(0.0, 0.0)],
                                      nms_iou=nms_iou, class_agnostic=class_agnostic)

    return _by_region([detections], merge, region)


def fuse_slide_detections(member_detections, fuse, region=1024):
    """The fusion of an ensemble's whole-slide detections, region by region.

    The slide counterpart of the tiled loops' last step: each member's tile detections
    are merged first as one detector's (:func:`merge_slide_detections`), then the
    members' slide-wide detections are fused, so no NMS runs after the fusion
    (docs/method.md#fused-ensemble). The fusion's clustering is quadratic in the
    detections it sees, so it runs as the merge does (:func:`_by_region`): on the
    detections of every member in a square and its 8 neighbours, keeping the fused
    boxes centred in the square. A cluster lies within its best detection's box, so
    it is formed from the same detections as in one fusion over the slide unless a
    chain of clusters runs over more than a square.

    Args:
        member_detections: per member, ``(bboxes (N_m, 4), scores, labels)`` arrays.
        fuse: the ensemble's fusion of one image's member detections, a callable from
            one ``InstanceData`` (``bboxes``, ``scores``, ``labels``) per member to one
            (:meth:`~mmdet_pu.models.detectors.FusedEnsemble.fuse`).
        region: side of the squares, in the boxes' pixels.

    Returns:
        ``(bboxes, scores, labels)`` of the fused detections, by descending score.
    """
    if not member_detections:
        raise ValueError('fuse_slide_detections needs the detections of one member or more')
    members = [_as_arrays(*detections) for detections in member_detections]
    return _by_region(members, lambda candidates: fuse(
        [_instances(*detections) for detections in candidates]), region)


def merge_slide_views(views, nms_iou=0.3, class_agnostic=False):
    """One model's slide-wide ``(bboxes, scores, labels)`` from the tile detections of its
    views (``[(bboxes, scores, labels), ...]``, the tiles as they are first): each
    view's tiles merged as one detector's (:func:`merge_slide_detections`), then, with
    test-time flips, the views fused region by region (:func:`fuse_slide_detections`
    with the tiled loops' fusion of views, :mod:`.test_flips`)."""
    merged = [merge_slide_detections(*view, nms_iou=nms_iou, class_agnostic=class_agnostic)
              for view in views]
    return merged[0] if len(merged) == 1 else fuse_slide_detections(merged, fuse_instances)


def _as_arrays(bboxes, scores, labels):
    return (np.asarray(bboxes, np.float32).reshape(-1, 4), np.asarray(scores, np.float32),
            np.asarray(labels, np.int64))


def _instances(bboxes, scores, labels) -> InstanceData:
    return InstanceData(bboxes=torch.from_numpy(bboxes), scores=torch.from_numpy(scores),
                        labels=torch.from_numpy(labels))


def _by_region(sources, reduce, region):
    """``reduce`` applied region by region to the detections of several ``sources``.

    Each detection belongs to the ``region`` x ``region`` square that holds its centre
    (squares at least twice the largest box). For every square that holds one,
    ``reduce`` gets, per source, the ``(bboxes, scores, labels)`` of that square and its
    8 neighbours and returns an ``InstanceData``; its detections centred in the square
    are kept.

    Returns:
        ``(bboxes, scores, labels)`` of every kept detection, by descending score.
    """
    boxes = np.concatenate([bboxes for bboxes, _, _ in sources])
    if len(boxes) == 0:
        return sources[0]
    sides = np.maximum(boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1])
    region = max(float(region), 2 * float(sides.max()), 1.0)

    def cells(boxes):
        centre = (boxes[:, :2] + boxes[:, 2:]) / 2
        return np.floor(centre / region).astype(np.int64)

    squares = []  # per source: square -> the indices of its detections
    for bboxes, _, _ in sources:
        owner = cells(bboxes)
        order = np.lexsort((owner[:, 0], owner[:, 1]))
        keys, starts, sizes = np.unique(owner[order], axis=0, return_index=True,
                                        return_counts=True)
        squares.append({tuple(k): order[s:s + n]
                        for k, s, n in zip(keys.tolist(), starts, sizes)})
    empty = np.zeros(0, np.int64)
    kept = []
    for cx, cy in sorted(set().union(*squares)):
        candidates = []
        for (bboxes, scores, labels), square in zip(sources, squares):
            near = np.concatenate([empty] + [
                square[(cx + dx, cy + dy)] for dy in (-1, 0, 1) for dx in (-1, 0, 1)
                if (cx + dx, cy + dy) in square])
            candidates.append((bboxes[near], scores[near], labels[near]))
        reduced = reduce(candidates)
        out = reduced.bboxes.numpy().reshape(-1, 4)
        mine = np.all(cells(out) == (cx, cy), axis=1)
        kept.append((out[mine], reduced.scores.numpy()[mine],
                     reduced.labels.numpy()[mine]))
    bboxes, scores, labels = (np.concatenate(parts) for parts in zip(*kept))
    order = np.argsort(-scores, kind='stable')
    return bboxes[order], scores[order], labels[order]
