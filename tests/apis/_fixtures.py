"""Slide inference test fixtures: TIFF slides with a resolution, a reader that records
its reads, a deterministic detector that finds dark blobs and an ensemble of them."""
from pathlib import Path

import cv2
import tifffile
import numpy as np
import torch
from mmengine.model import BaseModel
from mmengine.structures import InstanceData

from mmdet.models.data_preprocessors import DetDataPreprocessor
from mmdet.models.detectors.base import BaseDetector
from torch import nn

from cellio.slides import SlideReader
from mmdet_pu.models.detectors import FusedEnsemble
from mmdet_pu.models.detectors.box_fusion import member_weights


BACKGROUND, TISSUE, NUCLEUS = (240, 240, 240), (230, 170, 210), (60, 40, 110)
# 16 px "cells" (top-left corners) on a 640 x 480 slide; tiles of 128 px with overlap 32
# start at x = 0, 96, 192, ...: the cells at x = 90 and 100 lie on the first border.
CELLS = [(20, 20), (90, 40), (100, 200), (150, 100), (200, 300), (250, 420)]


def make_slide_image(tissue_width=320):
    """Tissue (pink) left of ``tissue_width`` with dark cells, glass on the right."""
    image = np.full((480, 640, 3), BACKGROUND, np.uint8)
    image[:, :tissue_width] = TISSUE
    for x, y in CELLS:
        image[y:y + 16, x:x + 16] = NUCLEUS
    return image


class RecordingReader(SlideReader):
    """Wraps a reader and records every region it is asked for."""

    def __init__(self, reader):
        self._reader = reader
        self.path, self.backend, self.mpp = reader.path, reader.backend, reader.mpp
        self.level_dimensions = reader.level_dimensions
        self.level_downsamples = reader.level_downsamples
        self.reads = []

    def _read(self, level, x, y, w, h):
        self.reads.append((level, x, y, w, h))
        return self._reader.read_region(level, x, y, w, h)

    def close(self):
        self._reader.close()


class BlobDetector(BaseModel):
    """Stand-in detector: every dark blob of a tile is a cell, scored by its area
    relative to a whole ``cell_size`` px cell (so a cell cut by a tile border scores
    lower, like a real detector's).

    ``sizes=(low, high)`` makes it a detector "trained" at one magnification: only blobs
    whose larger side, in pixels of the tile it is given (after any resize), lies in
    ``[low, high]`` are cells. ``mpp`` is its training resolution (``dataset_meta``).
    Records the tiles it sees; ``on_forward`` is called before each batch."""

    def __init__(self, on_forward=None, cell_size=16, sizes=None, mpp=None):
        super().__init__(data_preprocessor=DetDataPreprocessor())
        self.batches, self.on_forward, self.cell_size = [], on_forward, cell_size
        self.sizes = sizes
        self.dataset_meta = dict(classes=('cell', ), palette=[(255, 0, 0)], mpp=mpp)

    def forward(self, inputs, data_samples=None, mode='predict'):
        if self.on_forward is not None:
            self.on_forward()
        self.batches.append([sample.img_shape for sample in data_samples])
        for image, sample in zip(inputs, data_samples):
            height, width = sample.img_shape
            gray = image[:, :height, :width].float().mean(0).numpy()
            _, _, blobs, _ = cv2.connectedComponentsWithStats((gray < 100).astype(np.uint8))
            blobs = blobs[1:]
            if self.sizes is not None:
                side = blobs[:, 2:4].max(axis=1)
                blobs = blobs[(side >= self.sizes[0]) & (side <= self.sizes[1])]
            x, y, w, h, area = blobs.T.astype(np.float32)
            sx, sy = sample.scale_factor
            sample.pred_instances = InstanceData(
                bboxes=torch.from_numpy(np.stack([x / sx, y / sy, (x + w) / sx,
                                                  (y + h) / sy], 1).astype(np.float32)),
                scores=torch.from_numpy(np.minimum(
                    area / (self.cell_size ** 2 * sx * sy), 1)),
                labels=torch.zeros(len(blobs), dtype=torch.int64))
        return data_samples


class BlobEnsemble(FusedEnsemble):
    """A ``FusedEnsemble`` of given :class:`BlobDetector` members (built directly, not
    from a config), fusing as the real one does."""

    def __init__(self, members, weights=None, iou_thr=0.55):
        BaseDetector.__init__(self, data_preprocessor=DetDataPreprocessor())
        self.members = nn.ModuleList(members)
        self.iou_thr, self.weights = iou_thr, member_weights(weights, len(members))
        self.score_exponents = None
        self.dataset_meta = members[0].dataset_meta


def write_slide(path, image_rgb, mpp=None, levels=1, tile=128):
    """A tiled (zlib) pyramidal RGB TIFF, level ``k`` halving level ``k - 1`` (the layout
    OpenSlide reads as a generic tiled TIFF), whose resolution tags state ``mpp``
    micrometres per level-0 pixel (no tags for ``None``)."""
    level = np.ascontiguousarray(image_rgb)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with tifffile.TiffWriter(path) as tif:
        for k in range(levels):
            tags = {} if mpp is None else dict(
                resolution=(1e4 / (mpp * 2 ** k),) * 2, resolutionunit='CENTIMETER')
            tif.write(level, tile=(tile, tile), photometric='rgb', compression='zlib',
                      subfiletype=1 if k else 0, metadata=None, **tags)
            height, width = level.shape[:2]
            level = cv2.resize(level, (max(1, width // 2), max(1, height // 2)),
                               interpolation=cv2.INTER_AREA)
    return Path(path)
