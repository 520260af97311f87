"""The images ``prepare.py qupath`` writes: one crop per group of overlapping regions.

Each region's bounding box is clipped to QuPath's image, rounded outwards to whole
pixels, overlapping boxes are merged (:func:`region_crops`), and each such crop becomes
one :class:`~data_prep.writer.SourceImage` whose ``origin`` is its level-0 corner (an
image without regions is written whole). A cell belongs to the crop containing its
anchor (its point, or the centre of its box); cells outside every region polygon are
counted (``outside_regions``) and kept when they fall in a crop, skipped otherwise.
Ignored areas are painted :data:`IGNORED_FILL` and their cells dropped. A crop may not
exceed :data:`~cellio.images.MAX_WHOLE_PIXELS` pixels (test crops are written
whole).

:func:`source_images` also records in each entry's ``report`` what became of every
object (``cell: <class>``, ``region``, ``ignored area``, ``skipped: <reason>``).
"""
import math
import warnings
from collections import Counter

import numpy as np

from data_prep.writer import SourceImage
from cellio.geometry import inside_any, merge_overlapping
from cellio.images import MAX_WHOLE_PIXELS, CropReader, MaskedReader
from cellio.qupath import Region

#: Pixel value painted over ignored areas (white: glass).
IGNORED_FILL = 255
UNCLASSIFIED = 'skipped: unclassified (other cells are classified; --unclassified-class ' \
    'NAME keeps them)'
INSIDE_IGNORED = 'skipped: inside an ignored area'
OUTSIDE_REGIONS = 'skipped: outside every region'


def region_crops(regions, frame):
    """Crops ``(x, y, w, h)``: region bounds clipped to ``frame`` (``(x, y, w, h)``),
    rounded outwards to whole pixels, overlapping ones merged into the box of their
    union; row by row."""
    fx, fy, fw, fh = frame
    boxes = [(max(fx, math.floor(x0)), max(fy, math.floor(y0)),
              min(fx + fw, math.ceil(x1)), min(fy + fh, math.ceil(y1)))
             for x0, y0, x1, y1 in (region.bounds for region in regions)]
    boxes = merge_overlapping([b for b in boxes if b[2] > b[0] and b[3] > b[1]])
    return [(x0, y0, x1 - x0, y1 - y0)
            for y0, x0, y1, x1 in sorted((b[1], b[0], b[3], b[2]) for b in boxes)]


def derived_regions(cells, margin):
    """One rectangular :class:`~cellio.qupath.Region` per cell: its box grown by
    ``margin`` pixels."""
    return [Region.rectangle((x0 - margin, y0 - margin, x1 + margin, y1 + margin))
            for x0, y0, x1, y1 in (cell.box for cell in cells)]


def anchors_of(cells):
    """(N, 2) anchor of each cell: its point, or the centre of its box."""
    return np.asarray([cell.anchor for cell in cells], dtype=np.float64).reshape(-1, 2)


def source_images(entry, classes, unclassified_label, group, derive_margin):
    """The :class:`SourceImage` of each crop of one annotated image; fills
    ``entry.report`` with what became of every object."""
    content = entry.content
    outcomes = {kind: Counter() for kind in content.features}
    for skipped in content.skipped:
        outcomes.setdefault(skipped.object_type, Counter())[
            f'skipped: {skipped.reason}'] += skipped.count
    for areas, outcome in ((content.regions, 'region'),
                           (content.ignored_areas, 'ignored area')):
        if areas:
            outcomes.setdefault('annotation', Counter())[outcome] += len(
                {area.feature for area in areas})
    cells, labels = [], []
    ignored = inside_any([area.rings for area in content.ignored_areas],
                         anchors_of(content.cells))
    for cell, in_ignored in zip(content.cells, ignored):
        label = cell.label if cell.label is not None else unclassified_label
        if label is None:
            fate = UNCLASSIFIED
        elif label not in classes:
            fate = f'skipped: class {label!r} not in --classes'
        elif in_ignored:
            fate = INSIDE_IGNORED
        else:
            cells.append(cell)
            labels.append(label)
            continue
        outcomes.setdefault(cell.object_type, Counter())[fate] += 1
    anchors = anchors_of(cells)
    regions, derived = content.regions, []
    if not regions and derive_margin is not None:
        derived = derived_regions(cells, derive_margin)
    outside = ~inside_any([region.rings for region in regions], anchors) if regions else \
        np.zeros(len(cells), bool)
    if regions or derived:
        crops = region_crops(regions or derived, entry.image.frame)
    else:
        crops = [entry.image.frame] if derive_margin is None else []
    reader = entry.image.reader
    if content.ignored_areas:
        reader = MaskedReader(reader, content.ignored_areas, IGNORED_FILL)
    assigned = np.zeros(len(cells), dtype=bool)
    images, per_class = [], Counter()
    whole = (0, 0, *entry.image.size)
    for k, (x, y, w, h) in enumerate(crops, start=1):
        if w * h > MAX_WHOLE_PIXELS:
            what = f'region crop {k} at x={x}, y={y}' if regions or derived else \
                f'image {entry.source} (no region is drawn)'
            raise ValueError(f'{entry.display}: {what} is {w}x{h} pixels, more than '
                             f'{MAX_WHOLE_PIXELS} (test crops are written whole); draw '
                             'smaller regions (unclassified or Region* annotations) around '
                             'the annotated cells in QuPath, or derive them with '
                             '--derive-regions MARGIN')
        keep = np.flatnonzero(~assigned & (anchors[:, 0] >= x) & (anchors[:, 0] < x + w)
                              & (anchors[:, 1] >= y) & (anchors[:, 1] < y + h))
        assigned[keep] = True
        crop_cells = [cells[i] for i in keep]
        crop_labels = [classes.index(labels[i]) + 1 for i in keep]
        for i in keep:
            per_class[labels[i]] += 1
            outcomes.setdefault(cells[i].object_type, Counter())[f'cell: {labels[i]}'] += 1
        offset = np.array([x, y, x, y], dtype=np.float64)
        if all(c.point is not None for c in crop_cells):
            geometry = dict(points=anchors[keep] - offset[:2])
        else:
            boxes = np.asarray([c.box for c in crop_cells], dtype=np.float64).reshape(-1, 4)
            boxes -= offset
            geometry = dict(boxes=np.concatenate([boxes[:, :2], boxes[:, 2:] - boxes[:, :2]],
                                                 axis=1))
        is_whole = (x, y, w, h) == whole and not (regions or derived)
        images.append(SourceImage(
            source=entry.source, group=group, width=w, height=h, labels=crop_labels,
            reader=reader if is_whole else CropReader(reader, x, y),
            origin=None if is_whole else (x, y), mpp=entry.image.mpp, **geometry))
    for i in np.flatnonzero(~assigned):
        outcomes.setdefault(cells[i].object_type, Counter())[OUTSIDE_REGIONS] += 1
    entry.report = dict(
        file=entry.display, image=entry.source, size=list(entry.image.size),
        frame=list(entry.image.frame), mpp=entry.image.mpp, features=dict(content.features),
        objects={kind: dict(sorted(counts.items())) for kind, counts in outcomes.items()},
        cells=dict(sorted(per_class.items())), regions=len(regions),
        derived_regions=len(derived), ignored_areas=len(content.ignored_areas),
        crops=len(crops), outside_regions=int((outside & assigned).sum()),
        notes=list(content.notes))
    return images


def split_by_region_if_needed(images, n_folds, outside=()):
    """Give each crop its own group when the images (or slides) are too few for the
    split but their crops are not; a warning says so. ``outside``: the messages of
    regions left out because they lie outside their image, the first cause named when
    too few regions remain."""
    needed = 3 if n_folds == 1 else n_folds + 1
    groups = {image.group for image in images}
    if len(groups) >= needed:
        return
    if len(images) < needed:
        cause = ''.join(f'{message}; ' for message in outside)
        raise ValueError(f'{cause}{len(images)} annotated region(s) in {len(groups)} '
                         f'group(s) are too few for the split (it needs {needed}: a train, '
                         'a val and a test group per fold); draw more regions in QuPath '
                         '(or use --derive-regions) or annotate more images')
    for image in images:
        x, y = image.origin or (0, 0)
        image.group = f'{image.source}@x{x}_y{y}'
    warnings.warn(f'{len(groups)} image group(s) are too few for the split (it needs '
                  f'{needed}); splitting their {len(images)} regions instead, so train and '
                  'test regions may come from the same image', stacklevel=2)
