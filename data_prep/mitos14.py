"""MITOS-ATYPIA-14 (Aperio x40 frames) -> tiled COCO files.

The protocol: docs/method.md#datasets-and-deletion; the raw layout: docs/datasets.md.

Raw layout (``--src``; each slide folder may be doubled by the archive, ``A03/A03/``)::

    A03/frames/x40/A03_00Aa.tiff          1539 x 1376 RGB frame (size read from the file)
    A03/mitosis/A03_00Aa_mitosis.csv      x,y,score per line, no header, maybe 0 bytes
    A03/mitosis/A03_00Aa_not_mitosis.csv  rejected candidates (validated, not labels)

Every mitosis becomes a 32 x 32 box centred on its point, clipped to the frame, keeping
its pathologists' agreement ``score`` (used by the agreement deletion scheme); exact
duplicate points are dropped. Frames are cut into 500 x 500 tiles overlapping by 100
pixels and split 4:1:1 by slide with a fixed validation set and 5 folds (Section 3.1.1).
Every image entry records the frames' resolution, :data:`MPP` (``mpp``, µm per pixel).
"""
import re

import numpy as np

from cellio.images import LazyImageReader, image_size
from data_prep.folders import unique_folders
from data_prep.points import check_points_inside, first_occurrences, read_number_csv
from data_prep.writer import SourceImage, add_common_arguments, write_raw_dataset

CATEGORIES = ('mitosis',)
SLIDE_PATTERN = re.compile(r'A\d{2}')
FRAME_SUFFIXES = ('.tiff', '.tif')
CSV_FIELDS = ('x', 'y', 'score')
#: Micrometres per pixel of the x40 frames (Aperio ScanScope XT, the challenge's
#: documentation: 0.2455 µm/px).
MPP = 0.2455


def add_arguments(parser):
    """Options of ``prepare.py mitos14``."""
    add_common_arguments(parser, tile=500, overlap=100, box_size=32, n_folds=5)


def find_slides(src):
    """``{slide: folder}`` of the Aperio slides below ``src`` (``A03``, ``A03/A03``...).

    A slide folder is a folder named ``A<2 digits>`` containing ``frames/x40``, found
    at most three levels below ``src``.
    """
    candidates = [folder for pattern in ('A??', '*/A??', '*/*/A??', '*/*/*/A??')
                  for folder in sorted(src.glob(pattern))
                  if (folder / 'frames' / 'x40').is_dir()]
    slides = unique_folders(candidates, SLIDE_PATTERN, 'slide',
                            lambda folder: folder.relative_to(src))
    if not slides:
        raise ValueError(f'{src}: no Aperio slide folder found (expected e.g. '
                         'A03/frames/x40/A03_00Aa.tiff, possibly as A03/A03/...)')
    return dict(sorted(slides.items()))


def read_mitosis_csv(path, display):
    """``(points, scores, lines)`` of one ``x,y,score`` CSV file (scores in [0, 1])."""
    rows, lines = read_number_csv(path, CSV_FIELDS, display)
    bad = np.flatnonzero((rows[:, 2] < 0) | (rows[:, 2] > 1))
    if len(bad):
        i = bad[0]
        raise ValueError(f'{display} line {lines[i]}: score {rows[i, 2]:g} is outside '
                         '[0, 1] (expected the pathologists\' agreement)')
    return rows[:, :2], rows[:, 2], lines


def load_frame(src, slide, folder, frame_path):
    """Read the size and the mitoses of one frame; returns ``(SourceImage, stats)``.

    Args:
        src: raw dataset root (paths in messages and ``source`` are relative to it).
        slide: slide name, e.g. ``'A03'``.
        folder: the slide folder (holds ``frames/x40`` and ``mitosis``).
        frame_path: the frame's TIFF file.
    """
    name = frame_path.stem
    if not re.fullmatch(rf'{slide}_\d{{2}}[A-D][a-d]', name):
        raise ValueError(f'{frame_path.relative_to(src).as_posix()}: unexpected frame '
                         f'name (expected {slide}_<2-digit frame><A-D><a-d>, e.g. '
                         f'{slide}_00Aa)')
    width, height = image_size(frame_path)
    labels_dir = folder / 'mitosis'
    csv_path = labels_dir / f'{name}_mitosis.csv'
    display = csv_path.relative_to(src).as_posix()
    if not csv_path.is_file():
        raise ValueError(f'{display}: missing mitosis file of frame '
                         f'{frame_path.relative_to(src).as_posix()}')
    points, scores, lines = read_mitosis_csv(csv_path, display)
    check_points_inside(points, width, height, display, lines)
    keep = first_occurrences(points)
    stats = dict(duplicates_dropped=len(points) - len(keep), not_mitosis=0)
    negatives_path = labels_dir / f'{name}_not_mitosis.csv'
    if negatives_path.is_file():  # validated only: rejected candidates are no labels
        display = negatives_path.relative_to(src).as_posix()
        negatives, _, lines = read_mitosis_csv(negatives_path, display)
        check_points_inside(negatives, width, height, display, lines)
        stats['not_mitosis'] = len(negatives)
    frame = SourceImage(
        source=frame_path.relative_to(src).as_posix(), group=slide,
        reader=LazyImageReader(frame_path), width=width, height=height,
        labels=np.ones(len(keep)), points=points[keep], extra=dict(score=scores[keep]),
        mpp=MPP)
    return frame, stats


def load_frames(src):
    """``(frames, counts)``: a :class:`SourceImage` per x40 frame and the raw counts."""
    frames = []
    counts = dict(slides=0, frames=0, mitoses=0, duplicates_dropped=0, not_mitosis=0)
    for slide, folder in find_slides(src).items():
        paths = sorted(p for p in (folder / 'frames' / 'x40').iterdir()
                       if p.suffix.lower() in FRAME_SUFFIXES)
        if not paths:
            raise ValueError(f'{(folder / "frames" / "x40").relative_to(src)}: no TIFF '
                             'frames')
        counts['slides'] += 1
        for path in paths:
            frame, stats = load_frame(src, slide, folder, path)
            frames.append(frame)
            counts['frames'] += 1
            counts['mitoses'] += len(frame.points)
            for key, value in stats.items():
                counts[key] += value
    return frames, counts


def prepare(args):
    """Convert ``args.src`` to ``args.out``; returns the writer summary + raw counts."""
    frames, counts = load_frames(args.src)
    return write_raw_dataset(args, CATEGORIES, frames, counts)
