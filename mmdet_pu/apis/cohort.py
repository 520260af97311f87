"""Whole-slide inference over a cohort: sharded over processes and machines, resumable.

:func:`run_cohort` runs :func:`~mmdet_pu.apis.slide.infer_slide` on every slide of a
cohort that is not finished yet and writes (docs/slides.md, "Cohorts")::

    OUT/<stem>.geojson, OUT/<stem>.csv   per slide (write_slide_outputs), QuPath's frame
    OUT/manifest.csv                     one row per slide: status, cells, density, ...
    OUT/.cohort/<stem>.json              the record of a slide this run finished

Every process of a distributed run (``torchrun``, Slurm; the process group of
:func:`init_distributed`) calls it with the same arguments; a single process is the
shard of size 1, the same code path. The steps:

1. **Resume.** A slide is finished when its record says ``done`` with the
   :func:`fingerprint` of the same settings (config, checkpoint, cfg-options and every
   inference setting) and both outputs exist; finished slides are skipped unless
   ``overwrite``. Slides finished with other settings are recomputed, with a warning
   naming what changed. Failed, interrupted and new slides are pending.
2. **Plan.** Each process measures the :func:`slide_weight` of every ``world_size``-th
   pending slide (the work it will cost, from the tissue mask when that is cheap to
   compute), the weights are gathered and :func:`shard_slides` assigns the slides to
   processes by the longest-first rule on these weights only: the split is
   deterministic, whatever the timing.
3. **Run.** Each process runs its slides in name order. Before a slide runs, its
   record, outputs and the temporary files of an interrupted write are removed, so an
   interrupted slide restarts cleanly. Outputs are written atomically
   (:mod:`mmdet_pu.io.atomic`), then the record, which is the commit. An exception of a
   slide (an unreadable or corrupt file, a region outside it, ...) is recorded as
   ``failed`` with its message and the others go on.
4. **Manifest.** Process 0 rewrites ``manifest.csv`` after each of its slides and,
   once every process is done (a barrier), a last time.

Every slide's outputs are computed by one process from the same settings and model, with
cells in a fixed order, so they are byte-identical whatever the number of processes.
"""
import csv
import hashlib
import json
import os
import threading
import time
import warnings
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import torch
from mmengine.dist import all_gather_object, barrier, get_dist_info
from tqdm import tqdm

from mmdet_pu.io.atomic import atomic_open, write_json_atomic
from mmdet_pu.io.slides import find_slides, open_slide
from .slide import (ResolutionWarning, check_roi, infer_slide, plan_resolution,
                    write_slide_outputs)
from .tissue import TissueMaskConfig, compute_tissue_mask

#: Folder of OUT holding the per-slide records.
RECORDS = '.cohort'
#: The manifest's file name in OUT (a slide may not be called ``manifest``).
MANIFEST = 'manifest.csv'
#: Timeout of the process group: the final barrier waits for the slowest process.
DIST_TIMEOUT = timedelta(days=7)
#: The tissue mask is measured while planning when its read costs at most this many
#: pixels (a pyramid level at about 1/32 of the slide, or a small slide).
PLAN_MASK_PIXELS = 2 ** 24
#: Seconds between two refreshes of the cohort progress bar.
PROGRESS_INTERVAL = 2.0
#: QuPath's frames of ``roi`` and the outputs (:attr:`CohortSettings.frame`).
FRAMES = ('bounds', 'level0')


@dataclass(frozen=True)
class CohortSettings:
    """The inference settings of every slide (the arguments of
    :func:`~mmdet_pu.apis.slide.infer_slide`). ``target_mpp`` is the resolution the
    model sees (resolved: a number, or ``None`` to read ``level`` as it is).

    ``frame`` is QuPath's frame of ``roi`` and of the outputs
    (:meth:`~mmdet_pu.io.slides.SlideReader.qupath_frame`): ``'bounds'``, level 0 less
    the ``openslide.bounds-x/y`` of a slide that has them (QuPath's OpenSlide server),
    or ``'level0'``, level 0 as it is (a slide QuPath opened with Bio-Formats or
    ``--no-crop``); ``infer_slide``'s ``use_bounds``.
    """
    roi: Optional[Tuple[int, int, int, int]] = None
    frame: str = 'bounds'
    level: Optional[int] = None
    target_mpp: Optional[float] = None
    tile_size: int = 512
    overlap: int = 64
    batch_size: int = 8
    score_thr: float = 0.5
    nms_iou: float = 0.3
    class_agnostic: bool = False
    tissue: Optional[TissueMaskConfig] = field(default_factory=TissueMaskConfig)

    def __post_init__(self):
        if self.frame not in FRAMES:
            raise ValueError(f'frame must be one of {", ".join(FRAMES)}, got '
                             f'{self.frame!r}')

    @property
    def use_bounds(self) -> bool:
        """Whether QuPath's frame is the slide's OpenSlide bounds."""
        return self.frame == 'bounds'

    def infer_kwargs(self) -> dict:
        """Keyword arguments of :func:`~mmdet_pu.apis.slide.infer_slide`."""
        kwargs = {key: getattr(self, key) for key in self.__dataclass_fields__
                  if key != 'frame'}
        return dict(kwargs, use_bounds=self.use_bounds)

    def as_dict(self) -> dict:
        """JSON-ready dict (the tissue settings as a dict or ``None``)."""
        out = asdict(self)
        out['roi'] = None if self.roi is None else list(self.roi)
        return out


@dataclass
class CohortSummary:
    """What :func:`run_cohort` found and did.

    ``done``, ``failed`` and ``pending`` are the slide names of the whole cohort after
    the run (every process reads the records after the final barrier); ``skipped`` the
    slides finished before the run, ``run`` the slides this process ran.
    """
    done: List[str]
    failed: List[str]
    pending: List[str]
    skipped: List[str]
    run: List[str]
    manifest: Path


# --------------------------------------------------------------- process group --

def init_distributed(launcher: str, timeout: timedelta = DIST_TIMEOUT) -> Tuple[int, int]:
    """Join the process group of ``launcher`` (``'none'``, ``'pytorch'``: torchrun,
    ``'slurm'``: srun); returns ``(rank, world_size)``.

    The group only exchanges the plan and waits at the end, so it uses gloo: on GPUs
    through mmengine's ``init_dist`` (which also picks the process's GPU,
    ``LOCAL_RANK``), on CPUs directly from torchrun's environment, as CPU training does
    (:func:`mmdet_pu.launch.use_cpu_distributed`). ``timeout`` bounds the wait of the
    final barrier for the slowest process.

    Raises:
        ValueError: an unknown launcher, or Slurm without a GPU.
    """
    import torch.distributed as dist
    from mmengine.dist import init_dist

    if launcher == 'none':
        return 0, 1
    if launcher not in ('pytorch', 'slurm'):
        raise ValueError(f'--launcher must be none, pytorch or slurm, got {launcher!r}')
    if not dist.is_initialized():
        if torch.cuda.is_available():
            init_dist(launcher, backend='gloo', timeout=int(timeout.total_seconds()))
        elif launcher == 'pytorch':
            dist.init_process_group(backend='gloo', timeout=timeout)
        else:
            raise ValueError('--launcher slurm without a GPU is not supported; start the '
                             'processes with torchrun (--launcher pytorch) for CPU runs')
    return get_dist_info()


def close_distributed() -> None:
    """Leave the process group of :func:`init_distributed` (if any)."""
    import torch.distributed as dist
    if dist.is_initialized():
        dist.destroy_process_group()


# --------------------------------------------------------------------- slides --

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
    resolution (:func:`~mmdet_pu.apis.slide.plan_resolution`). A slide that cannot be
    read, or whose QuPath image does not hold the ROI, weighs 0 (it fails, with its
    message, when it runs).
    """
    try:
        with open_slide(path) as reader, warnings.catch_warnings():
            warnings.simplefilter('ignore', ResolutionWarning)
            ox, oy, width, height = reader.qupath_frame(settings.use_bounds)
            x, y, w, h = check_roi(settings.roi, (width, height), path)
            roi = (x + ox, y + oy, w, h)  # level-0 pixels
            plan = plan_resolution(reader, settings.target_mpp, settings.level)
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


# ------------------------------------------------------------------- records --

def fingerprint(settings: dict) -> str:
    """SHA-1 of the canonical JSON of ``settings``."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha1(text.encode('utf-8')).hexdigest()


def _record_path(out_dir: Path, slide: Path) -> Path:
    return out_dir / RECORDS / f'{slide.stem}.json'


def _outputs(out_dir: Path, slide: Path) -> Tuple[Path, Path]:
    return out_dir / f'{slide.stem}.geojson', out_dir / f'{slide.stem}.csv'


def read_record(out_dir, slide) -> Optional[dict]:
    """The record of ``slide`` in ``out_dir``, ``None`` if absent or unreadable."""
    try:
        return json.loads(_record_path(Path(out_dir), Path(slide)).read_text())
    except (OSError, ValueError):
        return None


def _clear(out_dir: Path, slide: Path) -> None:
    """Remove the record, the outputs and the temporary siblings of interrupted atomic
    writes of ``slide`` (only the process that runs the slide touches these)."""
    for path in (_record_path(out_dir, slide), *_outputs(out_dir, slide)):
        path.unlink(missing_ok=True)
        if path.parent.is_dir():  # atomic_open's siblings: .<name>.<random>.tmp
            for entry in os.scandir(path.parent):
                if entry.name.startswith(f'.{path.name}.') and entry.name.endswith('.tmp'):
                    Path(entry.path).unlink(missing_ok=True)


def _record(slide: Path, settings: dict, digest: str, result=None, error=None,
            seconds=0.0) -> dict:
    record = dict(slide=slide.name, status='failed' if error else 'done', error=error,
                  seconds=round(seconds, 3), fingerprint=digest, settings=settings)
    if result is not None:
        record.update(
            cells=int(len(result.scores)), counts=result.counts(),
            tissue_px=round(result.tissue_area_px), tissue_mm2=result.tissue_area_mm2,
            cells_per_mm2=result.cells_per_mm2, mpp=result.mpp, level=result.level,
            resample=result.resample, tiles_run=result.tiles_run,
            origin=list(result.origin))
    return record


def _fmt(value, spec):
    return '' if value is None else format(value, spec)


def write_manifest(out_dir, slides: Sequence[Path], classes: Sequence[str],
                   digest: str) -> Path:
    """Write ``OUT/manifest.csv`` (atomically) from the records: one row per slide of
    the cohort, in name order.

    Columns: ``slide``, ``status`` (``done``, ``failed``, or ``pending``: not run with
    these settings yet), ``cells`` and ``cells_<class>`` per class, ``tissue_px``
    (tissue area in level-0 pixels), ``tissue_mm2`` and ``cells_per_mm2`` (when the
    slide has a resolution), ``mpp`` (the slide's, per level-0 pixel), ``level`` (read),
    ``seconds`` and ``error``.
    """
    out_dir = Path(out_dir)
    path = out_dir / MANIFEST
    header = ['slide', 'status', 'cells', *(f'cells_{name}' for name in classes),
              'tissue_px', 'tissue_mm2', 'cells_per_mm2', 'mpp', 'level', 'seconds',
              'error']
    with atomic_open(path, 'w', newline='') as f:
        out = csv.writer(f)
        out.writerow(header)
        for slide in sorted(slides, key=lambda s: s.name):
            record = read_record(out_dir, slide)
            if record is None or record.get('fingerprint') != digest:
                out.writerow([slide.name, 'pending'] + [''] * (len(header) - 2))
                continue
            counts = record.get('counts') or {}
            done = record['status'] == 'done'
            out.writerow([
                slide.name, record['status'], record.get('cells', '') if done else '',
                *(counts.get(name, 0) if done else '' for name in classes),
                _fmt(record.get('tissue_px'), 'd'), _fmt(record.get('tissue_mm2'), '.6g'),
                _fmt(record.get('cells_per_mm2'), '.1f'), _fmt(record.get('mpp'), 'g'),
                _fmt(record.get('level'), 'd'), _fmt(record.get('seconds'), '.1f'),
                record.get('error') or ''])
    return path


# ---------------------------------------------------------------------- run --

class _CohortBar:
    """The overall progress bar (slides of the whole cohort), on process 0: it counts
    the records of the pending slides in OUT every :data:`PROGRESS_INTERVAL` seconds,
    so it follows every process."""

    def __init__(self, out_dir: Path, pending: Sequence[Path], total: int, enabled: bool):
        self.records = out_dir / RECORDS
        self.names = {f'{slide.stem}.json' for slide in pending}
        self.initial = total - len(pending)
        self.bar = tqdm(total=total, initial=self.initial, unit='slide', desc='cohort',
                        disable=not enabled, dynamic_ncols=True)
        self.stop = threading.Event()
        self.thread = None
        if enabled and pending:
            self.thread = threading.Thread(target=self._poll, name='cohort-progress',
                                           daemon=True)
            self.thread.start()

    def refresh(self):
        try:
            names = {entry.name for entry in os.scandir(self.records)}
        except OSError:
            names = set()
        self.bar.n = self.initial + len(self.names & names)
        self.bar.refresh()

    def _poll(self):
        while not self.stop.wait(PROGRESS_INTERVAL):
            self.refresh()

    def close(self):
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
        if not self.bar.disable:
            self.refresh()
        self.bar.close()


def _changes(old: dict, new: dict) -> str:
    """``key: old -> new`` for the settings that differ."""
    keys = sorted(set(old) | set(new), key=str)
    return ', '.join(f'{k}: {old.get(k)!r} -> {new.get(k)!r}' for k in keys
                     if json.dumps(old.get(k), sort_keys=True, default=str)
                     != json.dumps(new.get(k), sort_keys=True, default=str))


def run_cohort(model, slides: Sequence, out_dir, settings: CohortSettings = CohortSettings(),
               identity: Optional[dict] = None, overwrite=False, progress=True,
               prefetch=2) -> CohortSummary:
    """Detect the cells of every unfinished slide of ``slides`` into ``out_dir``, this
    process's share of them in a distributed run (the steps: module doc).

    Args:
        model: the detector (:func:`~mmdet_pu.apis.slide.init_slide_model`), on this
            process's device.
        slides: slide paths (:func:`find_cohort`); the same list on every process.
        out_dir: output directory, shared by all processes.
        settings: the inference settings.
        identity: what else makes the results, e.g. ``dict(config=..., checkpoint=...)``;
            part of the :func:`fingerprint` with ``settings`` and the model's classes.
        overwrite: recompute finished slides too.
        progress: show the cohort and per-slide progress bars (process 0 only).
        prefetch: batches the reader thread of each slide may read ahead.

    Returns:
        a :class:`CohortSummary`.
    """
    slides = [Path(s) for s in slides]
    check_names(slides)
    out_dir = Path(out_dir)
    rank, world_size = get_dist_info()
    classes = list((getattr(model, 'dataset_meta', None) or {}).get('classes', ('cell', )))
    run_settings = dict(identity or {}, **settings.as_dict(), classes=classes)
    digest = fingerprint(run_settings)
    say = tqdm.write if world_size == 1 else (lambda text: print(f'[rank {rank}] {text}',
                                                                 flush=True))

    # 1. resume
    records = {slide: read_record(out_dir, slide) for slide in slides}
    finished = [] if overwrite else [
        slide for slide, record in records.items()
        if record and record.get('status') == 'done' and record.get('fingerprint') == digest
        and all(p.is_file() for p in _outputs(out_dir, slide))]
    stale = [slide for slide, record in records.items()
             if record and record.get('status') == 'done' and slide not in finished
             and record.get('fingerprint') != digest]
    if rank == 0 and stale and not overwrite:
        example = records[stale[0]].get('settings') or {}
        warnings.warn(f'{out_dir}: {len(stale)} slide(s) were finished with other settings '
                      f'({_changes(example, run_settings)}); they are recomputed')
    pending = [slide for slide in slides if slide not in finished]

    # 2. plan: weights measured round-robin and gathered; process 0's pending list, one
    # split on every process
    if world_size > 1:
        share = {str(slide): slide_weight(slide, settings)
                 for slide in pending[rank::world_size]}
        gathered = all_gather_object(([str(slide) for slide in pending], share))
        pending = [Path(name) for name in gathered[0][0]]
        weights = {}
        for _, part in gathered:
            weights.update(part)
        shards = shard_slides([weights.get(str(slide), 0.0) for slide in pending],
                              world_size)
        mine = [pending[i] for i in shards[rank]]
    else:
        mine = list(pending)
    if rank == 0 and finished:
        say(f'{len(finished)} of {len(slides)} slides already finished with these settings '
            f'(skipped; --overwrite recomputes them)')

    # 3. run this process's slides; their old records go first (the progress bar counts
    # the records of pending slides)
    for slide in mine:
        _record_path(out_dir, slide).unlink(missing_ok=True)
    bar = _CohortBar(out_dir, pending, len(slides), progress and rank == 0)
    try:
        for slide in mine:
            _clear(out_dir, slide)
            start = time.perf_counter()
            try:
                result = infer_slide(model, slide, prefetch=prefetch,
                                     progress=progress and rank == 0,
                                     **settings.infer_kwargs())
                write_slide_outputs(result, out_dir)
                record = _record(slide, run_settings, digest, result,
                                 seconds=time.perf_counter() - start)
                say(result.summary())
            except Exception as err:  # isolation: the slide is recorded, the others go on
                message = f'{type(err).__name__}: {err}'
                record = _record(slide, run_settings, digest, error=message,
                                 seconds=time.perf_counter() - start)
                say(f'{slide.name}: FAILED: {message}')
            write_json_atomic(_record_path(out_dir, slide), record, indent=1)
            if rank == 0:
                bar.refresh()
                write_manifest(out_dir, slides, classes, digest)
    finally:
        bar.close()

    # 4. everyone done: the last manifest
    barrier()
    manifest = out_dir / MANIFEST
    if rank == 0:
        manifest = write_manifest(out_dir, slides, classes, digest)
    status = {}
    for slide in slides:
        record = read_record(out_dir, slide)
        status[slide.name] = record['status'] if record and \
            record.get('fingerprint') == digest else 'pending'
    return CohortSummary(
        done=[name for name, s in status.items() if s == 'done'],
        failed=[name for name, s in status.items() if s == 'failed'],
        pending=[name for name, s in status.items() if s == 'pending'],
        skipped=[s.name for s in finished], run=[s.name for s in mine], manifest=manifest)
