"""The report of ``prepare.py qupath``: for each annotation file the features by object
type and what became of each (``cell: <class>``, ``region``, ``ignored area``,
``skipped: <reason>``; a multi-point counts one object per point), the dataset-wide
counts, and why nothing was written when no cell was.
"""
from collections import Counter

from data_prep.qupath_crops import INSIDE_IGNORED, OUTSIDE_REGIONS, UNCLASSIFIED

REPORT_FILE = 'qupath_report.json'


def format_outcomes(objects):
    """``'annotation: region 2, cell: tumor 3; detection: ...'`` of a report entry."""
    parts = []
    for kind, counts in objects.items():
        if counts:
            parts.append(f'{kind}: ' + ', '.join(f'{k} {n}' for k, n in counts.items()))
    return '; '.join(parts) or 'no objects'


def report_lines(entries):
    """The printed report: one line per file and its first notes."""
    lines = []
    for entry in entries:
        report = entry.report
        features = ', '.join(f'{k} {n}' for k, n in report['features'].items())
        lines.append(f'{report["file"]} -> {report["image"]}: {sum(report["features"].values())}'
                     f' feature(s) ({features or "none"}): {format_outcomes(report["objects"])}')
        lines += [f'    note: {note}' for note in report['notes'][:5]]
        if len(report['notes']) > 5:
            lines.append(f'    ... {len(report["notes"]) - 5} more note(s) in {REPORT_FILE}')
    return lines


def totals(entries):
    """``{object type: {outcome: count}}`` summed over the files."""
    objects = {}
    for entry in entries:
        for kind, counts in entry.report['objects'].items():
            objects.setdefault(kind, Counter()).update(counts)
    return {kind: dict(sorted(counts.items())) for kind, counts in objects.items()}


def no_cell_message(entries, classes):
    """Why nothing was written, per file, and what to change."""
    shown = entries[:20]
    lines = [f'  {entry.display}: {format_outcomes(entry.report["objects"])}' for entry in
             shown]
    if len(entries) > len(shown):
        lines.append(f'  ... and {len(entries) - len(shown)} more file(s)')
    outcomes = Counter()
    for counts in totals(entries).values():
        outcomes.update(counts)
    hints = []
    if outcomes[UNCLASSIFIED]:
        hints.append('unclassified cells are skipped when other cells are classified: keep '
                     'them with --unclassified-class NAME')
    if any(k.startswith('skipped: class ') for k in outcomes):
        hints.append(f'cells of classes outside --classes {classes} are skipped: check '
                     '--classes')
    if outcomes['region'] and not any(k.startswith('cell: ') for k in outcomes):
        hints.append('annotation polygons are regions (unclassified, Region*, or a class '
                     'not in --classes); if they outline cells, classify them in QuPath '
                     'or pass --unclassified-polygons cell')
    if outcomes[OUTSIDE_REGIONS]:
        hints.append('cells outside every region are skipped: draw the regions around the '
                     'annotated cells')
    if outcomes['skipped: outside the image']:
        hints.append('objects outside the image are skipped: is each export that of its '
                     'image? (slides with openslide.bounds-*: see --frame)')
    if not hints:
        hints.append('mark cells as points (or detections / cell-class polygons) in QuPath '
                     'and export them with the regions')
    return ('no cell to write (nothing written):\n' + '\n'.join(lines) + '\nFix: ' +
            '; '.join(hints))


def raw_counts(annotated, images, unused, without_export, classes):
    """Dataset-wide counts (summed over the report's files)."""
    outcomes = Counter()
    for counts in totals(annotated).values():
        outcomes.update(counts)
    reports = [entry.report for entry in annotated]
    return dict(
        images=len(annotated), groups=len({image.group for image in images}),
        regions=sum(r['regions'] for r in reports),
        derived_regions=sum(r['derived_regions'] for r in reports),
        ignored_areas=sum(r['ignored_areas'] for r in reports), crops=len(images),
        cells_read=sum(len(entry.content.cells) for entry in annotated),
        cells_written=sum(len(image.labels) for image in images),
        other_class=sum(n for k, n in outcomes.items() if k.startswith('skipped: class ')),
        unclassified=outcomes[UNCLASSIFIED], inside_ignored=outcomes[INSIDE_IGNORED],
        outside_regions=sum(r['outside_regions'] for r in reports),
        dropped_outside_regions=outcomes[OUTSIDE_REGIONS],
        skipped_features=sum(len(entry.content.skipped) for entry in annotated),
        images_without_export=without_export, unused_files=len(unused),
        per_class={name: sum(r['cells'].get(name, 0) for r in reports) for name in classes})
