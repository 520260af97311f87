"""The detections of one slide and what it took to get them (:class:`SlideResult`)."""
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np


@dataclass
class SlideResult:
    """Detections of one slide and what it took to get them.

    ``bboxes`` are ``(N, 4)`` float32 ``x0, y0, x1, y1`` in QuPath's frame of the whole
    slide (level-0 pixels less ``origin``, QuPath's origin in level-0 pixels:
    :meth:`~cellio.slides.SlideReader.qupath_frame`; the ROI offset included),
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
