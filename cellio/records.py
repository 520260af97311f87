"""Records of finished work: the one store that lets a rerun resume from the disk.

A record is a JSON file beside the work it describes, written atomically once that work
is complete (it is the commit), holding what was done and with which settings: a
training run's ``run.json`` (:class:`mmdet_pu.workflow.runs.Run`) and a cohort
slide's ``.cohort/<stem>.json`` (:mod:`mmdet_pu.apis.cohort_records`). A rerun reads
the records, skips the work they show finished with the same settings and redoes the
rest.

* :func:`read_record`, :func:`write_record`, :func:`discard` -- a record (or an output
  it commits) read, written, removed; :func:`discard_partial_writes` -- what a killed
  write of one left;
* :func:`fingerprint`, :func:`settings_changes` -- the settings a record was made with,
  compared with a run's.
"""
import hashlib
import json
import os
from pathlib import Path
from typing import Optional

from .atomic import write_json_atomic


def read_record(path) -> Optional[dict]:
    """The record at ``path``, ``None`` if absent or unreadable (records are written
    atomically, so an unreadable one is not this package's)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def write_record(path, record: dict) -> None:
    """Write ``record`` to ``path`` as JSON, atomically (parent folders are created)."""
    write_json_atomic(path, record, indent=1)


def discard(path) -> None:
    """Remove the file ``path`` (if any) and what interrupted writes of it left
    (:func:`discard_partial_writes`)."""
    Path(path).unlink(missing_ok=True)
    discard_partial_writes(path)


def discard_partial_writes(path) -> None:
    """Remove the temporary siblings that atomic writes of ``path`` left when they were
    killed (:func:`~cellio.atomic.atomic_open`'s ``.<name>.<random>.tmp``)."""
    path = Path(path)
    if path.parent.is_dir():
        for entry in os.scandir(path.parent):
            if entry.name.startswith(f'.{path.name}.') and entry.name.endswith('.tmp'):
                Path(entry.path).unlink(missing_ok=True)


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def fingerprint(settings: dict) -> str:
    """SHA-1 of the canonical JSON of ``settings``."""
    return hashlib.sha1(_canonical(settings).encode('utf-8')).hexdigest()


def settings_changes(old: dict, new: dict) -> str:
    """``key: old -> new`` for the settings that differ, comma-separated."""
    keys = sorted(set(old) | set(new), key=str)
    return ', '.join(f'{k}: {old.get(k)!r} -> {new.get(k)!r}' for k in keys
                     if _canonical(old.get(k)) != _canonical(new.get(k)))
