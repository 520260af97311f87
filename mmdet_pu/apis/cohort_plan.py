"""Which slides a cohort holds and which process runs each.

:func:`find_cohort` lists the slides; :func:`my_slides` gives each process of a
distributed run its share: every process measures the :func:`slide_weight` of every
``world_size``-th pending slide (the work it will cost), the weights are gathered and
:func:`shard_slides` splits the slides by the longest-first rule on these weights only,
so the split is deterministic, whatever the timing.
"""
import warnings
from pathlib import Path
from typing import List, Sequence

from mmengine.dist import all_gather_object

from cellio.slides import find_slides, open_slide
from .cohort_records import MANIFEST
from .cohort_settings import CohortSettings
from .resolution import ResolutionWarning, level0_roi, plan_resolution
from .tissue import compute_tissue_mask

#: The tissue mask is measured while planning when its read costs at most this many
#: pixels (a pyramid level at about 1/32 of the slide, or a small slide).
PLAN_MASK_PIXELS = 2 ** 24


def find_cohort(path) -> List[Path]:
    """The slides of ``path``: a slide file, a directory (its slide files, sorted, not
    recursive) or a ``.txt`` list of slide paths, one a line (relative ones below the
    list's directory; blank lines and ``#`` comments skipped).

    Raises:
        FileNotFoundError: ``path`` or a listed slide does not exist.
        ValueError: two slides share a stem (their outputs would clash), a slide is
            called ``manifest``, or the list is empty.
    """
    path = Path(path)
    if path.suffix.lower() == '.txt' and path.is_file():
        slides = []
        for number, line in enumerate(path.read_text().splitlines(), 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            slide = Path(line) if Path(line).is_absolute() else path.parent / line
            if not slide.is_file():
                raise FileNotFoundError(f'{path} line {number}: slide file {slide} not '
                                        'found')
            slides.append(slide)
        if not slides:
            raise ValueError(f'{path}: the list names no slide')
    else:
        slides = find_slides(path)
    check_names(slides)
    return slides


def check_names(slides: Sequence[Path]) -> None:
    """Refuse slides whose outputs would clash: equal stems, or the stem ``manifest``
    (``manifest.csv`` is the run's)."""
    stems = [Path(s).stem for s in slides]
    clashes = sorted({s for s in stems if stems.count(s) > 1})
    if clashes:
        raise ValueError(f'slides with the same name would write the same outputs: '
                         f'{", ".join(clashes)}')
    if Path(MANIFEST).stem in stems:
        raise ValueError(f'a slide called {Path(MANIFEST).stem} would overwrite the run\'s '
                         f'{MANIFEST}; rename it')


def slide_weight(path, settings: CohortSettings) -> float:
    """The pixels the model will see on a slide: its tissue area (the ROI's, in QuPath's
    frame of ``settings.frame``, when the tissue mask is off or too costly to measure:
    its read would exceed :data:`PLAN_MASK_PIXELS`), scaled to the model's input
    resolution (:func:`~.resolution.plan_resolution`). A slide that cannot be read, or
    whose QuPath image does not hold the ROI, weighs 0 (it fails, with its message, when
    it runs).
    """
    try:
        with open_slide(path) as reader, warnings.catch_warnings():
            warnings.simplefilter('ignore', ResolutionWarning)
            (_, _, w, h), roi, _ = level0_roi(reader, settings.roi, settings.use_bounds)
            plan = plan_resolution(reader, settings.target_mpp, settings.level,
                                   scale=settings.scale)
            area = float(w * h)
            if settings.tissue is not None:
                downsamples = reader.level_downsamples
                read = max(d for d in downsamples
                           if d <= settings.tissue.downsample or d == downsamples[0])
                if area / read ** 2 <= PLAN_MASK_PIXELS:
                    area *= compute_tissue_mask(reader, roi, settings.tissue).tissue_fraction
            scale = plan.resample / reader.level_downsamples[plan.level]
            return area * scale ** 2
    except Exception:  # any error: the slide is recorded as failed when it runs
        return 0.0


def shard_slides(weights: Sequence[float], world_size: int) -> List[List[int]]:
    """Split slides ``0 .. len(weights) - 1`` over ``world_size`` processes.

    Longest first: the slides in order of decreasing weight (ties by index) go one by
    one to the process with the least weight so far (ties: the lowest rank). The split
    depends on the weights alone; each process's slides are returned in index order.
    """
    if world_size < 1:
        raise ValueError(f'world_size must be >= 1, got {world_size}')
    loads, shards = [0.0] * world_size, [[] for _ in range(world_size)]
    for index in sorted(range(len(weights)), key=lambda i: (-weights[i], i)):
        rank = min(range(world_size), key=lambda r: (loads[r], r))
        shards[rank].append(index)
        loads[rank] += weights[index]
    return [sorted(shard) for shard in shards]


def my_slides(pending: Sequence[Path], settings: CohortSettings, rank: int,
              world_size: int) -> List[Path]:
    """The slides of ``pending`` that process ``rank`` runs: the weights measured
    round-robin and gathered, and process 0's pending list, give one split on every
    process (all of them with one process)."""
    if world_size == 1:
        return list(pending)
    share = {str(slide): slide_weight(slide, settings)
             for slide in pending[rank::world_size]}
    gathered = all_gather_object(([str(slide) for slide in pending], share))
    pending = [Path(name) for name in gathered[0][0]]
    weights = {}
    for _, part in gathered:
        weights.update(part)
    shards = shard_slides([weights.get(str(slide), 0.0) for slide in pending], world_size)
    return [pending[i] for i in shards[rank]]
