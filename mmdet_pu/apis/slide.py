"""Whole-slide inference as a library call: reader -> tissue mask -> lazy tiles ->
batched model -> merge -> detections in QuPath's level-0 pixels (docs/slides.md).

    model = init_slide_model('configs/pu/nucls_mpu.py', 'iter_2580.pth')  # .slide_model
    result = infer_slide(model, 'slide.svs', roi=(20000, 8000, 4096, 4096))
    print(result.summary())
    write_slide_outputs(result, 'out/')  # cellio.detection_writers: GeoJSON, CSV

The steps of :func:`infer_slide`:

1. **Where.** The ROI, in QuPath's frame, in level-0 pixels
   (:func:`~.resolution.level0_roi`), and the pyramid level and resampling that give the
   model its training resolution (:func:`~.resolution.plan_resolution`); ``tile_size``
   and ``overlap`` are pixels of the training resolution.
2. **Tiles.** The ROI of that level cut into ``tile_size`` windows with ``overlap`` (the
   windows of :func:`~cellio.tiling.window_grid`, as in ``TiledTestLoop``:
   :func:`tile_windows`); windows without tissue are skipped (:func:`tissue_tiles`).
3. **Detect.** A reader thread reads the tiles and packs them into batches, at most
   ``prefetch`` batches ahead of the model (:func:`~.tile_batches.tile_batches`); each
   batch goes through the model's ``test_step`` (its data preprocessor normalises and
   pads, as for the test images) and the boxes above ``score_thr`` and centred in their
   tile's core (:func:`~mmdet_pu.engine.runner.tile_merge.tile_cores`) are kept as
   compact arrays in level-0 pixels (:func:`detect_tiles`).
4. **Merge.** The duplicates of cells seen by overlapping tiles are removed with the
   tiled loop's class-wise NMS, region by region
   (:func:`~mmdet_pu.engine.runner.tile_merge.merge_slide_detections`), so that the cost
   stays linear in the number of cells. A ``FusedEnsemble`` (what
   ``tools/fit_prior.py`` returns) is run as the tiled loops run it: each member's
   tiles are detected and merged as one detector's, then the members' slide-wide
   detections are fused, region by region
   (:func:`~mmdet_pu.engine.runner.tile_merge.fuse_slide_detections`), and
   ``score_thr`` applies to the fused scores. With ``flips`` (test-time flips,
   docs/method.md#test-time-flips) every tile is also predicted mirrored, each view's
   tiles are merged as one detector's and the views are fused the same way, per model
   (per member) before the members are, as the tiled loops do.
5. **Result.** The cells in QuPath's frame, in one order however the slide was run
   (:class:`~.slide_result.SlideResult`).
"""
import contextlib
import time
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np
import torch
from tqdm import tqdm

from mmdet_pu.engine.runner.tile_merge import (fuse_slide_detections, in_core,
                                               merge_slide_views, tile_cores)
from mmdet_pu.engine.runner.test_flips import check_flips, flip_back, flip_tile
from mmdet_pu.engine.runner.tiled_loop import prediction_steps
from cellio.qupath import default_color
from cellio.slides import SlideReader, open_slide
from cellio.tiling import window_grid
from .resolution import ResolutionPlan, level0_roi, level_region, plan_resolution
from .slide_model import InputFormat, input_format
from .slide_result import SlideResult
from .tile_batches import tile_batches, tile_converter, tile_sample
from .tissue import TissueMaskConfig, compute_tissue_mask


def infer_slide(model, slide, roi=None, level=None,
                target_mpp: Union[float, str, None] = 'model', tile_size=512, overlap=64,
                batch_size=8, score_thr=0.5, nms_iou=0.3, class_agnostic=False,
                tissue: Optional[TissueMaskConfig] = TissueMaskConfig(), prefetch=2,
                progress=True, use_bounds=True,
                scale: Union[float, str, None] = 'model',
                flips: Sequence[str] = ()) -> SlideResult:
    """Detect the cells of a slide region (the steps: module doc).

    Args:
        model: a detector with ``test_step`` and ``dataset_meta`` (e.g. from
            :func:`~.slide_model.init_slide_model`); its ``cfg`` (if any) gives the
            :func:`~.slide_model.input_format`.
        slide: a slide path or an open :class:`SlideReader` (left open).
        roi: ``(x, y, w, h)`` in QuPath's frame (level-0 pixels; on a slide with
            ``openslide.bounds-*`` counted from the bounds' corner); ``None`` for the
            whole slide (QuPath's image).
        level: pyramid level to read; ``None``: the level closest to ``target_mpp``
            (level 0 without one). See :func:`~.resolution.plan_resolution`.
        target_mpp: micrometres per pixel the model sees (the training images'):
            ``'model'`` for ``model.dataset_meta['mpp']``, a number, or ``None`` to read
            ``level`` as it is. Tiles are resampled to it when the slide states its
            resolution.
        scale: the factor the model's training images were resampled by from their
            sources (``prepare.py masks|qupath --scale``): ``'model'`` for
            ``model.dataset_meta['scale']``, a number, or ``None``. Where ``target_mpp``
            or the slide's resolution is unknown, the slide is resampled by it (as an
            image of the kind the training images came from).
        tile_size, overlap: windows in pixels of the model's input resolution (before
            the pipeline's resize): of ``target_mpp``, or of ``level`` without one.
        batch_size: tiles per forward pass.
        score_thr: detections below it are dropped (docs/method.md#evaluation evaluates at 0.5).
        nms_iou: IoU threshold of the merge across tile borders.
        class_agnostic: merge across classes (one class per place) instead of per class.
        tissue: tissue mask settings, ``None`` to run every tile.
        prefetch: batches the reader thread may read ahead.
        progress: show a tqdm progress bar (tiles/s).
        use_bounds: QuPath's frame is the OpenSlide bounds (QuPath's OpenSlide server);
            ``False`` for level 0 (a slide QuPath opened with Bio-Formats or
            ``--no-crop``).
        flips: test-time flips, directions among ``'horizontal'``, ``'vertical'``,
            ``'diagonal'`` (``tools/infer_slide.py --tta``: all three; four times the
            inference); the views' detections are fused (module doc, step 4).
    """
    flips = check_flips(flips, 'infer_slide')
    start_time = time.perf_counter()
    fmt = input_format(model.cfg) if getattr(model, 'cfg', None) is not None \
        else InputFormat()
    meta = getattr(model, 'dataset_meta', None) or {}
    classes = tuple(meta.get('classes', ('cell', )))
    palette = list(meta.get('palette') or [default_color(name) for name in classes])
    target_mpp = _model_resolution(target_mpp, meta, 'mpp')
    scale = _model_resolution(scale, meta, 'scale')
    with contextlib.ExitStack() as stack:
        reader = slide if isinstance(slide, SlideReader) \
            else stack.enter_context(open_slide(slide))
        roi, region, origin = level0_roi(reader, roi, use_bounds)
        plan = plan_resolution(reader, target_mpp, level, scale=scale)
        windows = tile_windows(reader, region, plan, tile_size, overlap)
        tiles, mask = tissue_tiles(reader, region, plan.level, windows, tissue)
        steps, fuse = prediction_steps(model)
        fused = fuse is not None or bool(flips)
        # fused members and views keep every detection: score_thr is the fused score's
        found = detect_tiles(steps, reader, plan, tiles, fmt, batch_size,
                             0.0 if fused else score_thr, prefetch, progress, flips)
    merged = [merge_slide_views(views, nms_iou, class_agnostic) for views in found]
    bboxes, scores, labels = merged[0] if fuse is None \
        else fuse_slide_detections(merged, fuse)
    if fused:
        keep = scores >= score_thr
        bboxes, scores, labels = bboxes[keep], scores[keep], labels[keep]
    bboxes, scores, labels = in_qupath_order(bboxes, scores, labels, origin, len(classes))
    return SlideResult(
        path=Path(reader.path), bboxes=bboxes, scores=scores, labels=labels,
        classes=classes, palette=palette, roi=roi, level=plan.level, tiles_run=len(tiles),
        tiles_skipped=len(windows) - len(tiles),
        megapixels=sum(w * h for _, _, w, h in tiles) / 1e6,
        seconds=time.perf_counter() - start_time,
        tissue_fraction=None if mask is None else mask.tissue_fraction, mpp=plan.mpp,
        target_mpp=plan.target_mpp, resample=plan.resample, origin=origin)


def _model_resolution(value, meta, key):
    """``value``, or for ``'model'`` the model's ``dataset_meta[key]`` (``'mpp'``: the
    training resolution, ``'scale'``: the training images' resampling factor)."""
    if not isinstance(value, str):
        return value
    if value != 'model':
        name = 'target_mpp' if key == 'mpp' else key
        raise ValueError(f"{name} must be a number, 'model' or None, got {value!r}")
    return meta.get(key)


def tile_windows(reader: SlideReader, region, plan: ResolutionPlan, tile_size, overlap):
    """The windows ``(x, y, w, h)`` of the level-0 ``region`` in pixels of
    ``plan.level``: :func:`~cellio.tiling.window_grid` of ``tile_size`` and
    ``overlap`` pixels of the model's input."""
    lx, ly, lw, lh = level_region(reader, region, plan.level)
    return [(lx + x, ly + y, w, h) for x, y, w, h in
            window_grid(lw, lh, *plan.tiling(tile_size, overlap))]


def tissue_tiles(reader: SlideReader, region, level, windows, tissue):
    """The ``windows`` of ``level`` that hold tissue of the level-0 ``region``'s mask
    (:func:`~.tissue.compute_tissue_mask`), and the mask; every window and ``None``
    when ``tissue`` is ``None``."""
    if tissue is None:
        return windows, None
    mask = compute_tissue_mask(reader, region, tissue)
    scale = reader.level_downsamples[level]
    return [(x, y, w, h) for x, y, w, h in windows
            if mask.covers(x * scale, y * scale, (x + w) * scale, (y + h) * scale)], mask


def detect_tiles(steps, reader: SlideReader, plan: ResolutionPlan, windows,
                 fmt: InputFormat, batch_size, score_thr, prefetch, progress, flips):
    """The detections of each model's ``test_step`` in ``steps`` (one detector, or the
    members of an ensemble) on the ``windows`` of ``plan.level``, read once and ahead in
    batches (:func:`~.tile_batches.tile_batches`), each window as it is and mirrored in
    each of ``flips`` (its boxes flipped back): per step and view, those scoring at least
    ``score_thr``, of positive size and centred in their window's core, as
    ``(bboxes, scores, labels)`` arrays in level-0 pixels."""
    scale = reader.level_downsamples[plan.level]
    cores = dict(zip(windows, tile_cores(windows)))
    views = (None, *flips)
    found = [[([], [], []) for _ in views] for _ in steps]
    batches = tile_batches(reader, plan.level, windows, batch_size,
                           tile_converter(fmt, plan.resample), prefetch)
    with tqdm(total=len(windows), unit='tile', disable=not progress,
              desc=reader.path.name, leave=False) as bar, \
            contextlib.closing(batches), torch.no_grad():
        for inputs, chunk in batches:
            for step, step_found in zip(steps, found):
                for flip, (boxes, scores, labels) in zip(views, step_found):
                    for pred, window in zip(predict_view(step, inputs, chunk, flip), chunk):
                        x, y = window[:2]
                        bboxes = pred.bboxes + pred.bboxes.new_tensor([x, y, x, y])
                        sizes = bboxes[:, 2:] - bboxes[:, :2]
                        keep = (pred.scores >= score_thr) & (sizes > 0).all(dim=1) & \
                            in_core(bboxes, cores[window])
                        boxes.append(bboxes[keep].cpu().numpy() * scale)
                        scores.append(pred.scores[keep].cpu().numpy())
                        labels.append(pred.labels[keep].cpu().numpy())
            bar.update(len(chunk))
    return [[(np.concatenate(boxes), np.concatenate(scores), np.concatenate(labels))
             if boxes else
             (np.zeros((0, 4), np.float32), np.zeros(0, np.float32), np.zeros(0, np.int64))
             for boxes, scores, labels in step_found] for step_found in found]


def predict_view(step, inputs, windows, flip):
    """``step``'s detections of a batch of tiles (``inputs`` at ``windows``), the tiles
    mirrored in ``flip`` (None: as they are) and the boxes flipped back: per tile, its
    ``pred_instances`` in the window's pixels."""
    tiles = inputs if flip is None else [flip_tile(tile, flip) for tile in inputs]
    outputs = step(dict(inputs=tiles, data_samples=[
        tile_sample(tile, window) for tile, window in zip(tiles, windows)]))
    preds = [out.pred_instances for out in outputs]
    if flip is not None:
        for pred, (_, _, w, h) in zip(preds, windows):
            flip_back(pred, flip, h, w)
    return preds


def in_qupath_order(bboxes, scores, labels, origin, num_classes):
    """Level-0 detections shifted to QuPath's frame (less ``origin``) and sorted by
    descending score, ties by ``y0``, ``x0``, ``x1``, ``y1``, label.

    Raises:
        ValueError: a label is not one of the ``num_classes`` classes.
    """
    ox, oy = origin
    bboxes = bboxes - np.array([ox, oy, ox, oy], np.float32)
    if len(labels) and labels.max() >= num_classes:
        raise ValueError(f'the model predicted label {labels.max()} but dataset_meta names '
                         f'{num_classes} classes')
    order = np.lexsort((labels, bboxes[:, 3], bboxes[:, 2], bboxes[:, 0], bboxes[:, 1],
                        -scores))
    return (bboxes[order].astype(np.float32), scores[order],
            labels[order].astype(np.int64))
