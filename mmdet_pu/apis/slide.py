"""Whole-slide inference as a library call: reader -> tissue mask -> lazy tiles ->
batched model -> merge -> detections in QuPath's level-0 pixels (docs/slides.md).

    model = init_slide_model('configs/pu/nucls_mpu.py', 'iter_2580.pth')
    result = infer_slide(model, 'slide.svs', roi=(20000, 8000, 4096, 4096))
    print(result.summary())
    write_slide_outputs(result, 'out/')   # out/slide.geojson (QuPath), out/slide.csv

The region of interest of one pyramid level is cut into ``tile_size`` windows with
``overlap`` (the windows of :func:`~mmdet_pu.io.tiling.tile_grid`, as
in ``TiledTestLoop``); windows without tissue are skipped. A reader thread reads the
remaining windows and packs them into batches, at most ``prefetch`` batches ahead of the
model, so memory follows the batch, never the slide. Each batch goes through the model's
``test_step`` (its data preprocessor normalises and pads, as for the test images), the
boxes above ``score_thr`` and centred in their tile's core (the tile less half the
overlap along each edge shared with another tissue tile, as in ``TiledTestLoop``) are
kept as compact arrays and shifted to level-0 pixels, the duplicates of cells seen by
overlapping tiles are removed with the tiled loop's class-wise NMS
(:func:`merge_tile_predictions`), applied region by region
(:func:`merge_slide_detections`) so that the cost stays linear in the number of cells,
and the cells are counted from QuPath's origin (:meth:`SlideReader.qupath_frame`).

Resolution (:func:`plan_resolution`): the model sees pixels of its training resolution,
``target_mpp`` micrometres per pixel (by default the model's ``dataset_meta['mpp']``, which
:func:`init_slide_model` takes from the checkpoint). The slide is read at the pyramid
level closest to it and each tile is resampled by ``level mpp / target_mpp`` (unless
they agree within :data:`MPP_TOLERANCE`); ``tile_size`` and ``overlap`` are pixels of the
training resolution. A slide without a resolution is read at level 0 as it is, with a
:class:`ResolutionWarning`. ``roi`` and the output coordinates are always level-0 pixels
of QuPath's frame (:meth:`~mmdet_pu.io.slides.SlideReader.qupath_frame`), whatever the
level read.
"""
import contextlib
import csv
import math
import queue
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

import cv2
import numpy as np
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmengine.runner import load_checkpoint
from mmengine.structures import InstanceData
from tqdm import tqdm

from mmdet.registry import MODELS
from mmdet.structures import DetDataSample
from mmdet_pu.engine.runner.tile_merge import in_core, merge_tile_predictions, tile_cores
from mmdet_pu.io.atomic import atomic_open
from mmdet_pu.io.qupath import QuPathObject, default_color, write_geojson
from mmdet_pu.io.slides import SlideReader, open_slide
from mmdet_pu.io.tiling import tile_grid
from .tissue import TissueMaskConfig, compute_tissue_mask

#: Relative difference between a level's and the target's micrometres per pixel below
#: which the level is read as it is, without resampling (a 0.2527 µm/px scan for a model
#: trained at 0.25).
MPP_TOLERANCE = 0.05


class ResolutionWarning(UserWarning):
    """A slide without a resolution is read as it is, whatever the model's."""


@dataclass
class InputFormat:
    """How the config's test pipeline hands images to the model.

    Attributes:
        channel_order: ``'bgr'`` (``LoadImageFromFile``'s default) or ``'rgb'``.
        scale_factor: the test pipeline's ``Resize(scale_factor=...)``; tiles are resized
            by it and the model maps its boxes back (``rescale=True``).
    """
    channel_order: str = 'bgr'
    scale_factor: float = 1.0


@dataclass
class SlideResult:
    """Detections of one slide and what it took to get them.

    ``bboxes`` are ``(N, 4)`` float32 ``x0, y0, x1, y1`` in QuPath's frame of the whole
    slide (level-0 pixels less ``origin``, QuPath's origin in level-0 pixels:
    :meth:`~mmdet_pu.io.slides.SlideReader.qupath_frame`; the ROI offset included),
    sorted by descending ``scores`` (ties by ``y0``, ``x0``, ``x1``, ``y1``, ``labels``:
    one order, however the slide was run); ``labels`` index ``classes`` (colours:
    ``palette``). ``roi`` is the region run, in the same frame, ``megapixels`` the pixels
    of the tiles run (at ``level``), ``seconds`` the wall time of the call and
    ``tissue_fraction`` the tissue share of the ROI before the mask's dilation (``None``
    without a mask). ``mpp`` is the slide's micrometres per level-0 pixel (``None``:
    unknown), ``target_mpp`` the resolution the model saw (``None``: the level as it is)
    and ``resample`` the model pixels per pixel of ``level``.
    """
    path: Path
    bboxes: np.ndarray
    scores: np.ndarray
    labels: np.ndarray
    classes: Tuple[str, ...]
    palette: List[Tuple[int, int, int]]
    roi: Tuple[int, int, int, int]
    level: int = 0
    tiles_run: int = 0
    tiles_skipped: int = 0
    megapixels: float = 0.0
    seconds: float = 0.0
    tissue_fraction: Optional[float] = None
    origin: Tuple[int, int] = (0, 0)
    mpp: Optional[float] = None
    target_mpp: Optional[float] = None
    resample: float = 1.0

    @property
    def tissue_area_px(self) -> float:
        """Tissue area in level-0 pixels: the tissue share of the ROI (the whole ROI
        when no tissue mask was used)."""
        _, _, w, h = self.roi
        share = 1.0 if self.tissue_fraction is None else self.tissue_fraction
        return share * w * h

    @property
    def tissue_area_mm2(self) -> Optional[float]:
        """Tissue area in mm^2 (``None`` when the slide has no resolution)."""
        return None if self.mpp is None else self.tissue_area_px * self.mpp ** 2 / 1e6

    @property
    def cells_per_mm2(self) -> Optional[float]:
        """Cells per mm^2 of tissue (``None`` without a resolution or without tissue)."""
        area = self.tissue_area_mm2
        return None if not area else len(self.scores) / area

    @property
    def centres(self) -> np.ndarray:
        """``(N, 2)`` cell centres ``x, y``, in the frame of ``bboxes``."""
        return np.stack([(self.bboxes[:, 0] + self.bboxes[:, 2]) / 2,
                         (self.bboxes[:, 1] + self.bboxes[:, 3]) / 2], axis=1)

    def counts(self) -> Dict[str, int]:
        """Cells per class name."""
        numbers = np.bincount(self.labels, minlength=len(self.classes))
        return {name: int(n) for name, n in zip(self.classes, numbers)}

    def summary(self) -> str:
        """One line: cells per class, tiles run / skipped, throughput."""
        counts = ', '.join(f'{name} {n}' for name, n in self.counts().items())
        rate = self.megapixels / self.seconds if self.seconds > 0 else float('nan')
        density = '' if self.cells_per_mm2 is None else f' ({self.cells_per_mm2:.0f}/mm^2)'
        seen = f'level {self.level}'
        if self.target_mpp is not None:
            seen += f' at {self.target_mpp:g} um/px'
            if self.resample != 1.0:
                seen += f' (resampled x{self.resample:.3g})'
        return (f'{self.path.name}: {len(self.scores)} cells{density} ({counts}); {seen}; '
                f'tiles {self.tiles_run} run, {self.tiles_skipped} skipped; '
                f'{self.megapixels:.1f} MPix in {self.seconds:.1f} s ({rate:.2f} MPix/s)')


def _metainfo(cfg, checkpoint_meta):
    for meta in (cfg.get('test_dataloader', {}).get('dataset', {}).get('metainfo'),
                 cfg.get('metainfo'), checkpoint_meta):
        if meta and meta.get('classes'):
            return meta
    return None


def training_mpp(cfg, checkpoint_meta) -> Optional[float]:
    """The training resolution (micrometres per pixel): the checkpoint's
    ``dataset_meta['mpp']`` (the training set's metainfo: its images' ``mpp`` or the
    config's ``metainfo.mpp`` at training time), else ``mpp`` of the config's train,
    then test dataset ``metainfo``, then its top-level ``metainfo``; ``None`` if none
    says."""
    for meta in (checkpoint_meta,
                 cfg.get('train_dataloader', {}).get('dataset', {}).get('metainfo'),
                 cfg.get('test_dataloader', {}).get('dataset', {}).get('metainfo'),
                 cfg.get('metainfo')):
        if meta and meta.get('mpp') is not None:
            mpp = float(meta['mpp'])
            if not mpp > 0:
                raise ValueError(f'{cfg.filename}: the training resolution mpp must be > '
                                 f'0 micrometres per pixel, got {meta["mpp"]!r}')
            return mpp
    return None


def init_slide_model(config, checkpoint, device=None, cfg_options=None):
    """Build the detector of ``config``, load ``checkpoint`` and prepare it for slides.

    The model gets ``cfg`` (the config) and ``dataset_meta``: ``classes`` and
    ``palette`` of the config's test dataset ``metainfo``, else of its top-level
    ``metainfo``, else of the checkpoint (``class<i>`` names otherwise); classes without
    a palette entry get the GeoJSON writer's stable colour of their name
    (:func:`~mmdet_pu.io.qupath.default_color`); ``mpp``, the training resolution
    (:func:`training_mpp`, ``None`` if unknown). ``device`` defaults to ``'cuda'`` when
    available, else ``'cpu'``.
    """
    cfg = Config.fromfile(str(config))  # imports custom_imports, i.e. registers mmdet_pu
    if cfg_options:
        cfg.merge_from_dict(cfg_options)
    init_default_scope(cfg.get('default_scope', 'mmdet'))
    if device is None:
        device = 'cuda' if torch.cuda.is_available() else 'cpu'
    if str(device).startswith('cuda') and not torch.cuda.is_available():
        raise ValueError(f'device {device!r}: no CUDA device is available to this torch '
                         f'{torch.__version__} (use cpu)')
    model = MODELS.build(cfg.model)
    ckpt = load_checkpoint(model, str(checkpoint), map_location='cpu')
    num_classes = cfg.model.get('roi_head', {}).get('bbox_head', {}).get('num_classes')
    checkpoint_meta = ckpt.get('meta', {}).get('dataset_meta')
    meta = _metainfo(cfg, checkpoint_meta)
    if meta is None:
        classes = tuple(f'class{i}' for i in range(num_classes or 1))
        palette = []
    else:
        classes, palette = tuple(meta['classes']), list(meta.get('palette') or [])
    if num_classes is not None and len(classes) != num_classes:
        raise ValueError(f'{config}: metainfo names {len(classes)} classes {classes} but '
                         f'model.roi_head.bbox_head.num_classes is {num_classes}')
    palette = [tuple(int(v) for v in palette[i]) if i < len(palette)
               else default_color(name) for i, name in enumerate(classes)]
    model.cfg = cfg
    model.dataset_meta = dict(classes=classes, palette=palette,
                              mpp=training_mpp(cfg, checkpoint_meta))
    return model.to(device).eval()


def _test_pipeline(cfg):
    pipeline = cfg.get('test_dataloader', {}).get('dataset', {}).get('pipeline')
    return pipeline if pipeline is not None else cfg.get('test_pipeline', [])


def input_format(cfg) -> InputFormat:
    """The channel order and resize of ``cfg``'s test pipeline (see :class:`InputFormat`).

    Raises:
        ValueError: the pipeline resizes to a fixed ``scale`` (meaningless for tiles) or
            by unequal factors.
    """
    fmt = InputFormat()
    for step in _test_pipeline(cfg):
        kind = step.get('type')
        if kind == 'LoadImageFromFile':
            fmt.channel_order = step.get('channel_order', 'bgr')
        elif kind == 'Resize':
            factor = step.get('scale_factor')
            if step.get('scale') is not None or factor is None:
                raise ValueError(f'{cfg.filename}: the test pipeline resizes to a fixed '
                                 f'scale ({step}); slides need Resize(scale_factor=s) or '
                                 'no Resize (choose the --level whose pixel size fits)')
            if isinstance(factor, (tuple, list)):
                if len(set(factor)) != 1:
                    raise ValueError(f'{cfg.filename}: Resize scale_factor {factor}: only '
                                     'equal factors are supported for slides')
                factor = factor[0]
            fmt.scale_factor = float(factor)
    if fmt.channel_order not in ('bgr', 'rgb'):
        raise ValueError(f'{cfg.filename}: LoadImageFromFile channel_order must be bgr or '
                         f'rgb, got {fmt.channel_order!r}')
    return fmt


def slide_defaults(cfg) -> dict:
    """``tile_size``, ``nms_iou`` and ``class_agnostic`` of the config's
    ``TiledTestLoop`` (else the model's test NMS), the settings the model was evaluated
    with."""
    nms = cfg.model.get('test_cfg', {}).get('rcnn', {}).get('nms', {})
    loop = cfg.get('test_cfg') or {}
    return dict(
        tile_size=int(loop.get('tile_size', 512)),
        nms_iou=float(loop.get('nms_iou', nms.get('iou_threshold', 0.3))),
        class_agnostic=bool(loop.get('class_agnostic', nms.get('class_agnostic', False))))


class _Failure:
    def __init__(self, error):
        self.error = error


_DONE = object()


def tile_batches(reader: SlideReader, level: int, windows, batch_size: int, to_input,
                 prefetch: int = 2):
    """Yield ``(inputs, windows)`` batches, read by a background thread.

    The thread reads the windows' pixels (``reader.read_region``), converts each with
    ``to_input`` and queues full batches; at most ``prefetch`` batches wait in the
    queue, so at most ``prefetch + 2`` batches of tiles exist at any time (queued, being
    read, being predicted). An error of the reader is raised here. Close the generator
    (``contextlib.closing``) to stop the thread early.
    """
    if batch_size < 1 or prefetch < 1:
        raise ValueError(f'batch_size and prefetch must be >= 1, got {batch_size}, '
                         f'{prefetch}')
    batches = queue.Queue(maxsize=prefetch)
    stop = threading.Event()

    def put(item):
        while not stop.is_set():
            try:
                batches.put(item, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    def produce():
        try:
            for start in range(0, len(windows), batch_size):
                chunk = windows[start:start + batch_size]
                inputs = [to_input(reader.read_region(level, *window)) for window in chunk]
                if not put((inputs, chunk)):
                    return
            put(_DONE)
        except BaseException as err:  # handed to the consumer, which raises it
            put(_Failure(err))

    thread = threading.Thread(target=produce, name='slide-tile-reader', daemon=True)
    thread.start()
    try:
        while True:
            item = batches.get()
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item
    finally:
        stop.set()
        thread.join()


def merge_slide_detections(bboxes, scores, labels, nms_iou=0.3, class_agnostic=False,
                           region=1024):
    """NMS of a whole slide's tile detections, region by region.

    One NMS over all the cells of a slide costs time quadratic in their number. Here
    each detection belongs to the ``region`` x ``region`` square that holds its centre;
    the detections of every square and its 8 neighbours go through
    :func:`merge_tile_predictions` together, and the survivors that belong to the square
    are kept. Squares are at least twice as large as the largest box, so every box that
    could suppress a kept one, and every box that could suppress that one, is among
    the candidates: the result equals one NMS over the slide unless a chain of
    suppressions runs over more than a square.

    Args:
        bboxes: (N, 4) ``x0, y0, x1, y1``; scores: (N,); labels: (N,) int.
        nms_iou: IoU threshold of the NMS.
        class_agnostic: one NMS over all classes instead of one per class.
        region: side of the squares, in the boxes' pixels.

    Returns:
        ``(bboxes, scores, labels)`` of the kept detections, by descending score.
    """
    bboxes = np.asarray(bboxes, np.float32).reshape(-1, 4)
    scores, labels = np.asarray(scores, np.float32), np.asarray(labels, np.int64)
    if len(bboxes) == 0:
        return bboxes, scores, labels
    sides = np.maximum(bboxes[:, 2] - bboxes[:, 0], bboxes[:, 3] - bboxes[:, 1])
    region = max(float(region), 2 * float(sides.max()), 1.0)

    def cells(boxes):
        centre = (boxes[:, :2] + boxes[:, 2:]) / 2
        return np.floor(centre / region).astype(np.int64)

    owner = cells(bboxes)
    order = np.lexsort((owner[:, 0], owner[:, 1]))
    keys, starts, sizes = np.unique(owner[order], axis=0, return_index=True,
                                    return_counts=True)
    members = {tuple(k): order[s:s + n] for k, s, n in zip(keys.tolist(), starts, sizes)}
    kept = []
    for (cx, cy), own in members.items():
        candidates = np.concatenate([
            members[(cx + dx, cy + dy)] for dy in (-1, 0, 1) for dx in (-1, 0, 1)
            if (cx + dx, cy + dy) in members])
        merged = merge_tile_predictions([InstanceData(
            bboxes=torch.from_numpy(bboxes[candidates]),
            scores=torch.from_numpy(scores[candidates]),
            labels=torch.from_numpy(labels[candidates]))], [(0.0, 0.0)], nms_iou=nms_iou,
            class_agnostic=class_agnostic)
        boxes = merged.bboxes.numpy()
        mine = np.all(cells(boxes) == (cx, cy), axis=1)
        kept.append((boxes[mine], merged.scores.numpy()[mine], merged.labels.numpy()[mine]))
    bboxes, scores, labels = (np.concatenate(parts) for parts in zip(*kept))
    order = np.argsort(-scores, kind='stable')
    return bboxes[order], scores[order], labels[order]


@dataclass(frozen=True)
class ResolutionPlan:
    """How a slide is read: pyramid ``level``, resampled by ``resample`` (model pixels per
    pixel of the level) so that the model sees ``target_mpp`` micrometres per pixel
    (``None``: the level as it is); ``mpp`` is the slide's, per level-0 pixel."""
    level: int
    resample: float = 1.0
    mpp: Optional[float] = None
    target_mpp: Optional[float] = None

    def tiling(self, tile_size, overlap):
        """``(tile, overlap)`` in pixels of the level for ``tile_size`` and ``overlap``
        pixels of the model's input."""
        tile = max(1, round(tile_size / self.resample))
        return tile, min(tile - 1, round(overlap / self.resample))


def plan_resolution(reader: SlideReader, target_mpp=None, level=None,
                    tolerance=MPP_TOLERANCE) -> ResolutionPlan:
    """Which level of ``reader`` to read, and how much to resample it, for a model
    trained at ``target_mpp`` micrometres per pixel.

    * ``target_mpp`` is ``None``: ``level`` (default 0) as it is.
    * the slide has no resolution: ``level`` (default 0) as it is, with a
      :class:`ResolutionWarning`.
    * otherwise ``level``, by default the level closest to ``target_mpp``
      (:meth:`~mmdet_pu.io.slides.SlideReader.level_for_mpp`), resampled by
      ``level mpp / target_mpp``, unless the two differ by at most ``tolerance``
      (relative): then as it is.

    Raises:
        ValueError: ``level`` does not exist or ``target_mpp`` is not positive.
    """
    if level is not None and not 0 <= level < reader.level_count:
        raise ValueError(f'{reader.path}: level {level} does not exist (levels 0-'
                         f'{reader.level_count - 1} with the {reader.backend} reader)')
    if target_mpp is None:
        return ResolutionPlan(level or 0, mpp=reader.mpp)
    target_mpp = float(target_mpp)
    if not target_mpp > 0:
        raise ValueError(f'target resolution must be > 0 micrometres per pixel, got '
                         f'{target_mpp}')
    if reader.mpp is None:
        warnings.warn(f'{reader.path}: the slide does not state its resolution; reading '
                      f'level {level or 0} as it is, not resampled to the model\'s '
                      f'{target_mpp:g} micrometres per pixel', ResolutionWarning,
                      stacklevel=2)
        return ResolutionPlan(level or 0)
    if level is None:
        level = reader.level_for_mpp(target_mpp)
    resample = reader.level_mpp(level) / target_mpp
    if abs(resample - 1) <= tolerance:
        resample = 1.0
    return ResolutionPlan(level, resample, reader.mpp, target_mpp)


def _level_region(reader, roi, level):
    """The ROI in pixels of ``level``: ``(x, y, w, h)``."""
    scale = reader.level_downsamples[level]
    width, height = reader.level_dimensions[level]
    x, y, w, h = roi
    x0, y0 = int(x // scale), int(y // scale)
    x1, y1 = min(width, math.ceil((x + w) / scale)), min(height, math.ceil((y + h) / scale))
    return x0, y0, x1 - x0, y1 - y0


def check_roi(roi, dimensions, path):
    """``roi`` as ints ``(x, y, w, h)`` inside the slide's ``dimensions`` (QuPath's
    image size, level-0 pixels); ``None``: all."""
    width, height = dimensions
    if roi is None:
        return 0, 0, width, height
    x, y, w, h = (int(v) for v in roi)
    if w <= 0 or h <= 0 or x < 0 or y < 0 or x + w > width or y + h > height:
        raise ValueError(f'{path}: ROI x={x} y={y} w={w} h={h} is not inside the '
                         f'{width}x{height} slide (level-0 pixels, QuPath\'s frame)')
    return x, y, w, h


def _converter(fmt: InputFormat, resample=1.0):
    """RGB tile -> the packed CHW uint8 tensor the test pipeline would give, after
    resampling by ``resample`` to the training resolution: one resize by
    ``resample * fmt.scale_factor``, area-averaged when the resampling shrinks the tile,
    bilinear otherwise (as the pipeline's ``Resize``)."""
    factor = resample * fmt.scale_factor
    interpolation = cv2.INTER_AREA if resample != 1.0 and factor < 1 else cv2.INTER_LINEAR

    def to_input(rgb):
        if factor != 1.0:
            h, w = rgb.shape[:2]
            rgb = cv2.resize(rgb, (max(1, round(w * factor)), max(1, round(h * factor))),
                             interpolation=interpolation)
        if fmt.channel_order == 'bgr':
            rgb = rgb[..., ::-1]
        return torch.from_numpy(np.ascontiguousarray(rgb.transpose(2, 0, 1)))
    return to_input


def infer_slide(model, slide, roi=None, level=None,
                target_mpp: Union[float, str, None] = 'model', tile_size=512, overlap=64,
                batch_size=8, score_thr=0.5, nms_iou=0.3, class_agnostic=False,
                tissue: Optional[TissueMaskConfig] = TissueMaskConfig(), prefetch=2,
                progress=True, use_bounds=True) -> SlideResult:
    """Detect the cells of a slide region.

    Args:
        model: a detector with ``test_step`` and ``dataset_meta`` (e.g. from
            :func:`init_slide_model`); its ``cfg`` (if any) gives the
            :func:`input_format`.
        slide: a slide path or an open :class:`SlideReader` (left open).
        roi: ``(x, y, w, h)`` in QuPath's frame (level-0 pixels; on a slide with
            ``openslide.bounds-*`` counted from the bounds' corner); ``None`` for the
            whole slide (QuPath's image).
        level: pyramid level to read; ``None``: the level closest to ``target_mpp``
            (level 0 without one). See :func:`plan_resolution`.
        target_mpp: micrometres per pixel the model sees (the training images'):
            ``'model'`` for ``model.dataset_meta['mpp']``, a number, or ``None`` to read
            ``level`` as it is. Tiles are resampled to it when the slide states its
            resolution.
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
    """
    start_time = time.perf_counter()
    fmt = input_format(model.cfg) if getattr(model, 'cfg', None) is not None \
        else InputFormat()
    meta = getattr(model, 'dataset_meta', None) or {}
    classes = tuple(meta.get('classes', ('cell', )))
    palette = list(meta.get('palette') or [default_color(name) for name in classes])
    if isinstance(target_mpp, str):
        if target_mpp != 'model':
            raise ValueError(f"target_mpp must be a number, 'model' or None, got "
                             f'{target_mpp!r}')
        target_mpp = meta.get('mpp')
    with contextlib.ExitStack() as stack:
        reader = slide if isinstance(slide, SlideReader) \
            else stack.enter_context(open_slide(slide))
        ox, oy, frame_width, frame_height = reader.qupath_frame(use_bounds)
        roi = check_roi(roi, (frame_width, frame_height), reader.path)
        level0_roi = (roi[0] + ox, roi[1] + oy, roi[2], roi[3])
        plan = plan_resolution(reader, target_mpp, level)
        level = plan.level
        scale = reader.level_downsamples[level]
        lx, ly, lw, lh = _level_region(reader, level0_roi, level)
        windows = [(lx + x, ly + y, w, h) for x, y, w, h in
                   tile_grid(lw, lh, *plan.tiling(tile_size, overlap))]
        total = len(windows)
        mask = None
        if tissue is not None:
            mask = compute_tissue_mask(reader, level0_roi, tissue)
            windows = [(x, y, w, h) for x, y, w, h in windows
                       if mask.covers(x * scale, y * scale, (x + w) * scale,
                                      (y + h) * scale)]
        cores = dict(zip(windows, tile_cores(windows)))
        boxes, scores, labels = [], [], []
        bar = stack.enter_context(tqdm(total=len(windows), unit='tile', disable=not progress,
                                       desc=reader.path.name, leave=False))
        batches = stack.enter_context(contextlib.closing(tile_batches(
            reader, level, windows, batch_size, _converter(fmt, plan.resample), prefetch)))
        with torch.no_grad():
            for inputs, chunk in batches:
                outputs = model.test_step(dict(inputs=inputs, data_samples=[
                    _tile_sample(tensor, window) for tensor, window in zip(inputs, chunk)]))
                for out, window in zip(outputs, chunk):
                    pred = out.pred_instances
                    x, y = window[:2]
                    bboxes = pred.bboxes + pred.bboxes.new_tensor([x, y, x, y])
                    sizes = bboxes[:, 2:] - bboxes[:, :2]
                    keep = (pred.scores >= score_thr) & (sizes > 0).all(dim=1) & in_core(
                        bboxes, cores[window])
                    boxes.append(bboxes[keep].cpu().numpy() * scale)
                    scores.append(pred.scores[keep].cpu().numpy())
                    labels.append(pred.labels[keep].cpu().numpy())
                bar.update(len(chunk))
    if boxes:
        merged = merge_slide_detections(np.concatenate(boxes), np.concatenate(scores),
                                        np.concatenate(labels), nms_iou=nms_iou,
                                        class_agnostic=class_agnostic)
    else:
        merged = (np.zeros((0, 4), np.float32), np.zeros(0, np.float32),
                  np.zeros(0, np.int64))
    bboxes, scores, labels = merged
    bboxes = bboxes - np.array([ox, oy, ox, oy], np.float32)  # level 0 -> QuPath's frame
    if len(labels) and labels.max() >= len(classes):
        raise ValueError(f'the model predicted label {labels.max()} but dataset_meta names '
                         f'{len(classes)} classes')
    order = np.lexsort((labels, bboxes[:, 3], bboxes[:, 2], bboxes[:, 0], bboxes[:, 1],
                        -scores))
    return SlideResult(
        path=Path(reader.path), bboxes=bboxes[order].astype(np.float32),
        scores=scores[order], labels=labels[order].astype(np.int64), classes=classes,
        palette=palette, roi=roi, level=level, tiles_run=len(windows),
        tiles_skipped=total - len(windows),
        megapixels=sum(w * h for _, _, w, h in windows) / 1e6,
        seconds=time.perf_counter() - start_time,
        tissue_fraction=None if mask is None else mask.tissue_fraction, mpp=plan.mpp,
        target_mpp=plan.target_mpp, resample=plan.resample, origin=(ox, oy))


def _tile_sample(tensor, window):
    """Metainfo of one tile as the test pipeline's ``PackDetInputs`` would give it."""
    _, _, w, h = window
    height, width = tensor.shape[-2:]
    return DetDataSample(metainfo=dict(img_shape=(height, width), ori_shape=(h, w),
                                       scale_factor=(width / w, height / h)))


def write_cells_csv(path, result: SlideResult):
    """``x,y,class,score`` per cell (centres in QuPath's frame), written atomically."""
    with atomic_open(path, 'w', newline='') as f:
        out = csv.writer(f)
        out.writerow(['x', 'y', 'class', 'score'])
        for (x, y), label, score in zip(result.centres, result.labels, result.scores):
            out.writerow([f'{x:.2f}', f'{y:.2f}', result.classes[label], f'{score:.4f}'])


def write_slide_outputs(result: SlideResult, out_dir, stem=None) -> Tuple[Path, Path]:
    """Write ``<stem>.geojson`` (QuPath detections: class name and colour, a ``score``
    measurement, QuPath's frame) and ``<stem>.csv`` (cell centres) to ``out_dir``.

    ``stem`` defaults to the slide's file name without its suffix. Both files are
    written atomically. Returns their paths.
    """
    out_dir = Path(out_dir)
    stem = stem or result.path.stem
    cells = [QuPathObject(box=tuple(float(v) for v in box), label=result.classes[label],
                          score=float(score))
             for box, label, score in zip(result.bboxes, result.labels, result.scores)]
    colors = {name: tuple(result.palette[i]) for i, name in enumerate(result.classes)}
    geojson, table = out_dir / f'{stem}.geojson', out_dir / f'{stem}.csv'
    out_dir.mkdir(parents=True, exist_ok=True)
    write_geojson(geojson, cells, colors)
    write_cells_csv(table, result)
    return geojson, table
