"""The files of a slide's detections: QuPath GeoJSON and a CSV of cell centres.

Both take the detections of one slide as
:class:`~mmdet_pu.apis.slide_result.SlideResult` holds them: ``bboxes`` ``(N, 4)``
``x0, y0, x1, y1`` in QuPath's frame, ``scores``, ``labels`` indexing ``classes``,
``palette`` (one RGB colour per class), ``centres`` ``(N, 2)`` and the slide's ``path``.
Both files are written atomically (:mod:`cellio.atomic`).
"""
import csv
from pathlib import Path
from typing import Tuple

from .atomic import atomic_open
from .qupath import QuPathObject, write_geojson


def write_cells_csv(path, result) -> None:
    """``x,y,class,score`` per cell (centres in QuPath's frame)."""
    with atomic_open(path, 'w', newline='') as f:
        out = csv.writer(f)
        out.writerow(['x', 'y', 'class', 'score'])
        for (x, y), label, score in zip(result.centres, result.labels, result.scores):
            out.writerow([f'{x:.2f}', f'{y:.2f}', result.classes[label], f'{score:.4f}'])


def write_slide_outputs(result, out_dir, stem=None) -> Tuple[Path, Path]:
    """Write ``<stem>.geojson`` (QuPath detections: class name and colour, a ``score``
    measurement, QuPath's frame) and ``<stem>.csv`` (:func:`write_cells_csv`) to
    ``out_dir``; returns their paths.

    ``stem`` defaults to the slide's file name without its suffix.
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
