"""Whole-slide inference over a cohort: sharded over processes and machines, resumable.

:func:`run_cohort` runs :func:`~mmdet_pu.apis.slide.infer_slide` on every slide of a
cohort that is not finished yet and writes the outputs, records and manifest of
:mod:`.cohort_records` (docs/slides.md, "Cohorts").

Every process of a distributed run (``torchrun``, Slurm; the process group of
:func:`mmdet_pu.engine.launch.init_distributed`) calls it with the same arguments; a single
process is the shard of size 1, the same code path. The steps:

1. **Resume.** A slide is finished when its record says ``done`` with the fingerprint
   (:func:`~cellio.records.fingerprint`) of the same settings (config,
   checkpoint, cfg-options and every inference setting) and both outputs exist;
   finished slides are skipped unless ``overwrite``. Slides finished with other
   settings are recomputed, with a warning naming what changed. Failed, interrupted and
   new slides are pending (:func:`~.cohort_records.finished_slides`); what a killed run
   left of a manifest write is removed.
2. **Plan.** The pending slides are split over the processes by the work they will
   cost, deterministically (:func:`~.cohort_plan.my_slides`).
3. **Run.** Each process runs its slides in name order (:func:`run_slide`). Before a
   slide runs, its record, outputs and the temporary files of an interrupted write are
   removed, so an interrupted slide restarts cleanly. Outputs are written atomically
   (:mod:`cellio.atomic`), then the record, which is the commit. An exception of a
   slide (an unreadable or corrupt file, a region outside it, ...) is recorded as
   ``failed`` with its message and the others go on.
4. **Manifest.** Process 0 rewrites ``manifest.csv`` after each of its slides and,
   once every process is done (a barrier), a last time.

Every slide's outputs are computed by one process from the same settings and model, with
cells in a fixed order, so they are byte-identical whatever the number of processes.
"""
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from mmengine.dist import barrier, get_dist_info
from tqdm import tqdm

from cellio.detection_writers import write_slide_outputs
from cellio.records import discard_partial_writes, fingerprint, write_record
from .cohort_plan import check_names, my_slides
from .cohort_progress import CohortProgress
from .cohort_records import (MANIFEST, clear_slide, finished_slides, record_path,
                             slide_record, slide_statuses, write_manifest)
from .cohort_settings import CohortSettings
from .slide import infer_slide


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

    def describe(self) -> str:
        """One line: the slides done, failed and pending, and the manifest."""
        total = len(self.done) + len(self.failed) + len(self.pending)
        return (f'{len(self.done)} done, {len(self.failed)} failed, {len(self.pending)} '
                f'pending of {total} slides ({len(self.skipped)} finished before); '
                f'{self.manifest}')


def run_cohort(model, slides: Sequence, out_dir, settings: CohortSettings = CohortSettings(),
               identity: Optional[dict] = None, overwrite=False, progress=True,
               prefetch=2) -> CohortSummary:
    """Detect the cells of every unfinished slide of ``slides`` into ``out_dir``, this
    process's share of them in a distributed run (the steps: module doc).

    Args:
        model: the detector (:func:`~mmdet_pu.apis.slide_model.init_slide_model`), on
            this process's device.
        slides: slide paths (:func:`~.cohort_plan.find_cohort`); the same list on every
            process.
        out_dir: output directory, shared by all processes.
        settings: the inference settings.
        identity: what else makes the results, e.g.
            :func:`~.cohort_settings.run_identity`; part of the fingerprint with
            ``settings`` and the model's classes.
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

    finished = finished_slides(out_dir, slides, run_settings, digest, overwrite,
                               warn=rank == 0)
    if rank == 0:  # the manifest's writer: what a kill in the middle of a write left
        discard_partial_writes(out_dir / MANIFEST)
    pending = [slide for slide in slides if slide not in finished]
    mine = my_slides(pending, settings, rank, world_size)
    if rank == 0 and finished:
        say(f'{len(finished)} of {len(slides)} slides already finished with these settings '
            f'(skipped; --overwrite recomputes them)')

    # the old records of this process's slides go first: the bar counts the records
    for slide in mine:
        record_path(out_dir, slide).unlink(missing_ok=True)
    bar = CohortProgress(out_dir, pending, len(slides), progress and rank == 0)
    try:
        for slide in mine:
            record = run_slide(model, slide, out_dir, settings, run_settings, digest,
                               prefetch, progress and rank == 0, say)
            write_record(record_path(out_dir, slide), record)
            if rank == 0:
                bar.refresh()
                write_manifest(out_dir, slides, classes, digest)
    finally:
        bar.close()

    barrier()  # every process done: the last manifest
    manifest = out_dir / MANIFEST
    if rank == 0:
        manifest = write_manifest(out_dir, slides, classes, digest)
    status = slide_statuses(out_dir, slides, digest)
    return CohortSummary(
        done=[name for name, s in status.items() if s == 'done'],
        failed=[name for name, s in status.items() if s == 'failed'],
        pending=[name for name, s in status.items() if s == 'pending'],
        skipped=[s.name for s in finished], run=[s.name for s in mine], manifest=manifest)


def run_slide(model, slide: Path, out_dir: Path, settings: CohortSettings,
              run_settings: dict, digest: str, prefetch: int, progress: bool,
              say: Callable[[str], None]) -> dict:
    """Detect the cells of ``slide`` into ``out_dir`` (its old record and outputs
    removed first) and return its record: ``done``, or ``failed`` with the message of
    any exception (the slide is isolated, the others go on)."""
    clear_slide(out_dir, slide)
    start = time.perf_counter()
    try:
        result = infer_slide(model, slide, prefetch=prefetch, progress=progress,
                             **settings.infer_kwargs())
        write_slide_outputs(result, out_dir)
        record = slide_record(slide, run_settings, digest, result,
                              seconds=time.perf_counter() - start)
        say(result.summary())
    except Exception as err:  # isolation: the slide is recorded, the others go on
        message = f'{type(err).__name__}: {err}'
        record = slide_record(slide, run_settings, digest, error=message,
                              seconds=time.perf_counter() - start)
        say(f'{slide.name}: FAILED: {message}')
    return record
