"""What a cohort run leaves in its output directory OUT, and how a rerun reads it::

    OUT/<stem>.geojson, OUT/<stem>.csv   per slide (write_slide_outputs), QuPath's frame
    OUT/.cohort/<stem>.json              the record of a slide a run finished
    OUT/manifest.csv                     one row per slide: status, cells, density, ...

A slide's record (:mod:`cellio.records`) is written after its outputs: it is the
commit. It says ``done`` or ``failed`` (with the error) and holds the settings and their
fingerprint; a slide is finished when its record says ``done`` with the fingerprint of
this run and both outputs exist (:func:`finished_slides`).
"""
import csv
import warnings
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from cellio.atomic import atomic_open
from cellio.records import discard, read_record, settings_changes

#: Folder of OUT holding the per-slide records.
RECORDS = '.cohort'
#: The manifest's file name in OUT (a slide may not be called ``manifest``).
MANIFEST = 'manifest.csv'
#: The manifest's columns taken from a record, and their format.
MANIFEST_FIELDS = (('tissue_px', 'd'), ('tissue_mm2', '.6g'), ('cells_per_mm2', '.1f'),
                   ('mpp', 'g'), ('level', 'd'), ('seconds', '.1f'))


def record_path(out_dir, slide) -> Path:
    """``OUT/.cohort/<stem>.json``: the record of ``slide``."""
    return Path(out_dir) / RECORDS / f'{Path(slide).stem}.json'


def slide_outputs(out_dir, slide) -> Tuple[Path, Path]:
    """``OUT/<stem>.geojson`` and ``OUT/<stem>.csv``: the outputs of ``slide``."""
    stem = Path(slide).stem
    return Path(out_dir) / f'{stem}.geojson', Path(out_dir) / f'{stem}.csv'


def read_slide_record(out_dir, slide) -> Optional[dict]:
    """The record of ``slide`` in ``out_dir``, ``None`` if absent or unreadable."""
    return read_record(record_path(out_dir, slide))


def clear_slide(out_dir, slide) -> None:
    """Remove the record and the outputs of ``slide``, and what interrupted writes of
    them left (only the process that runs the slide touches these)."""
    for path in (record_path(out_dir, slide), *slide_outputs(out_dir, slide)):
        discard(path)


def slide_record(slide: Path, settings: dict, digest: str, result=None, error=None,
                 seconds=0.0) -> dict:
    """The record of ``slide``: ``done`` with what ``result``
    (:class:`~.slide_result.SlideResult`) found, or ``failed`` with ``error``."""
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


def finished_slides(out_dir, slides: Sequence[Path], settings: dict, digest: str,
                    overwrite=False, warn=True) -> List[Path]:
    """The ``slides`` finished in ``out_dir`` with these ``settings`` (fingerprint
    ``digest``); none with ``overwrite``. Slides finished with other settings are not;
    ``warn`` names what changed."""
    records = {slide: read_slide_record(out_dir, slide) for slide in slides}
    done = {slide: record for slide, record in records.items()
            if record and record.get('status') == 'done'}
    finished = [] if overwrite else [
        slide for slide, record in done.items() if record.get('fingerprint') == digest
        and all(path.is_file() for path in slide_outputs(out_dir, slide))]
    stale = [slide for slide, record in done.items()
             if slide not in finished and record.get('fingerprint') != digest]
    if warn and stale and not overwrite:
        example = done[stale[0]].get('settings') or {}
        warnings.warn(f'{out_dir}: {len(stale)} slide(s) were finished with other settings '
                      f'({settings_changes(example, settings)}); they are recomputed')
    return finished


def _current_record(out_dir, slide, digest) -> Optional[dict]:
    """The record of ``slide`` if it was made with the fingerprint ``digest``."""
    record = read_slide_record(out_dir, slide)
    return record if record and record.get('fingerprint') == digest else None


def slide_statuses(out_dir, slides: Sequence[Path], digest: str) -> Dict[str, str]:
    """Per slide name: ``done``, ``failed``, or ``pending`` (not run with the settings
    of ``digest`` yet)."""
    statuses = {}
    for slide in slides:
        record = _current_record(out_dir, slide, digest)
        statuses[slide.name] = record['status'] if record else 'pending'
    return statuses


def _csv_value(value, spec):
    """``value`` formatted by ``spec``, empty for ``None``."""
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
    path = Path(out_dir) / MANIFEST
    header = ['slide', 'status', 'cells', *(f'cells_{name}' for name in classes),
              *(key for key, _ in MANIFEST_FIELDS), 'error']
    with atomic_open(path, 'w', newline='') as f:
        out = csv.writer(f)
        out.writerow(header)
        for slide in sorted(slides, key=lambda s: s.name):
            record = _current_record(out_dir, slide, digest)
            if record is None:
                out.writerow([slide.name, 'pending'] + [''] * (len(header) - 2))
                continue
            counts = record.get('counts') or {}
            done = record['status'] == 'done'
            out.writerow([
                slide.name, record['status'], record.get('cells', '') if done else '',
                *(counts.get(name, 0) if done else '' for name in classes),
                *(_csv_value(record.get(key), spec) for key, spec in MANIFEST_FIELDS),
                record.get('error') or ''])
    return path
