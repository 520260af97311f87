"""A cheap tissue mask of a slide region, to skip background tiles.

The region is read at about ``downsample`` level-0 pixels per mask pixel: from the
pyramid level closest to that resolution without being coarser, block by block
(:data:`BLOCK` pixels of that level at a time), each block averaged down to mask pixels.
Memory is one block plus the mask, whatever the slide's size; on a slide without a
pyramid this is one decoding pass over the region.

Rule, on the mean colour of each mask pixel (documented in docs/slides.md):

    tissue = (saturation >= ``saturation``  or  optical density >= ``optical_density``)
             and max(R, G, B) >= :data:`MIN_VALUE`

with HSV saturation ``(max - min) / max`` and the optical density averaged over the
three channels, ``-log10((I + 1) / 256)``. Glass is bright and grey (saturation about
0, OD about 0.03); eosin-stained stroma is pale but pink (saturation 0.15-0.4) and
nuclei are dark (OD > 0.3). Pure black (empty segments of sparse TIFFs, scanner
borders) is background. The mask is then dilated by ``dilate`` level-0 pixels, so
that cells at the edge of the tissue keep their tiles, and a tile runs when any mask
pixel under it is tissue.
"""
import math
from dataclasses import dataclass

import cv2
import numpy as np

#: Side (pixels of the level read) of the blocks the downsampled read decodes at once.
BLOCK = 2048
#: Brightest channel below this: black, not tissue.
MIN_VALUE = 20


@dataclass(frozen=True)
class TissueMaskConfig:
    """Settings of the tissue mask.

    Args:
        downsample: level-0 pixels per mask pixel (the read uses the pyramid level just
            finer than this and averages it down by an integer factor).
        saturation: minimum HSV saturation of tissue, in [0, 1].
        optical_density: minimum mean optical density of tissue.
        dilate: dilation of the tissue in level-0 pixels.
    """
    downsample: float = 32
    saturation: float = 0.08
    optical_density: float = 0.2
    dilate: float = 64

    def __post_init__(self):
        if not self.downsample >= 1:
            raise ValueError(f'tissue mask: downsample must be >= 1, got {self.downsample}')
        if not 0 <= self.saturation <= 1:
            raise ValueError(f'tissue mask: saturation must be in [0, 1], got '
                             f'{self.saturation}')
        if not self.optical_density >= 0:
            raise ValueError(f'tissue mask: optical_density must be >= 0, got '
                             f'{self.optical_density}')
        if not self.dilate >= 0:
            raise ValueError(f'tissue mask: dilate must be >= 0, got {self.dilate}')


def tissue_pixels(rgb, saturation=0.08, optical_density=0.2):
    """Boolean (H, W) mask of the tissue pixels of an RGB image (rule: module doc)."""
    rgb = np.asarray(rgb, dtype=np.float32)
    high, low = rgb.max(axis=2), rgb.min(axis=2)
    sat = (high - low) / np.maximum(high, 1)
    density = -np.log10((rgb + 1) / 256).mean(axis=2)
    return ((sat >= saturation) | (density >= optical_density)) & (high >= MIN_VALUE)


class TissueMask:
    """Tissue mask of a level-0 region.

    Args:
        mask: (H, W) bool, one pixel per ``scale`` x ``scale`` level-0 pixels.
        x0, y0: level-0 position of the mask's top-left pixel.
        scale: level-0 pixels per mask pixel.
        tissue_fraction: the tissue share of the region before ``mask`` was dilated
            (default: :attr:`fraction`).
    """

    def __init__(self, mask, x0, y0, scale, tissue_fraction=None):
        self.mask = np.asarray(mask, dtype=bool)
        self.x0, self.y0, self.scale = float(x0), float(y0), float(scale)
        self.tissue_fraction = self.fraction if tissue_fraction is None \
            else float(tissue_fraction)

    def covers(self, x0, y0, x1, y1):
        """Whether the level-0 box ``[x0, x1) x [y0, y1)`` contains tissue."""
        height, width = self.mask.shape
        c0 = max(0, math.floor((x0 - self.x0) / self.scale))
        r0 = max(0, math.floor((y0 - self.y0) / self.scale))
        c1 = min(width, math.ceil((x1 - self.x0) / self.scale))
        r1 = min(height, math.ceil((y1 - self.y0) / self.scale))
        return c0 < c1 and r0 < r1 and bool(self.mask[r0:r1, c0:c1].any())

    @property
    def fraction(self):
        """Fraction of the region that the (dilated) mask covers."""
        return float(self.mask.mean()) if self.mask.size else 0.0


def read_downsampled(reader, roi, downsample, block=BLOCK):
    """Mean colour of ``roi`` at about ``downsample`` level-0 pixels per pixel.

    Args:
        reader: a :class:`~cellio.slides.SlideReader`.
        roi: ``(x, y, w, h)`` in level-0 pixels.
        downsample: target level-0 pixels per output pixel.
        block: side of the blocks read at once (pixels of the level read).

    Returns:
        ``(image, scale, (x0, y0))``: an RGB ``uint8`` image of the region, the exact
        level-0 pixels per image pixel (the level's downsample times an integer factor)
        and the level-0 position of the image's top-left pixel.
    """
    x, y, w, h = roi
    downsamples = reader.level_downsamples
    level = max(i for i, d in enumerate(downsamples) if d <= downsample or i == 0)
    level_scale = downsamples[level]
    factor = max(1, int(downsample // level_scale))
    width, height = reader.level_dimensions[level]
    lx0, ly0 = int(x // level_scale), int(y // level_scale)
    lx1 = min(width, math.ceil((x + w) / level_scale))
    ly1 = min(height, math.ceil((y + h) / level_scale))
    step = max(1, block // factor) * factor
    out = np.zeros((math.ceil((ly1 - ly0) / factor), math.ceil((lx1 - lx0) / factor), 3),
                   np.uint8)
    for by in range(ly0, ly1, step):
        for bx in range(lx0, lx1, step):
            bw, bh = min(step, lx1 - bx), min(step, ly1 - by)
            pixels = reader.read_region(level, bx, by, bw, bh)
            pad_h, pad_w = -bh % factor, -bw % factor
            if pad_h or pad_w:
                pixels = np.pad(pixels, ((0, pad_h), (0, pad_w), (0, 0)), mode='edge')
            small = cv2.resize(pixels, (pixels.shape[1] // factor,
                                        pixels.shape[0] // factor),
                               interpolation=cv2.INTER_AREA)
            oy, ox = (by - ly0) // factor, (bx - lx0) // factor
            out[oy:oy + small.shape[0], ox:ox + small.shape[1]] = small
    return out, level_scale * factor, (lx0 * level_scale, ly0 * level_scale)


def compute_tissue_mask(reader, roi, cfg=TissueMaskConfig()):
    """:class:`TissueMask` of the level-0 region ``roi = (x, y, w, h)`` of ``reader``
    (its ``tissue_fraction`` measured before the dilation)."""
    image, scale, (x0, y0) = read_downsampled(reader, roi, cfg.downsample)
    mask = tissue_pixels(image, cfg.saturation, cfg.optical_density)
    tissue_fraction = float(mask.mean()) if mask.size else 0.0
    radius = math.ceil(cfg.dilate / scale)
    if radius > 0 and mask.any():
        kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1,) * 2)
        mask = cv2.dilate(mask.astype(np.uint8), kernel).astype(bool)
    return TissueMask(mask, x0, y0, scale, tissue_fraction)
