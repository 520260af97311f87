"""Write cells as a QuPath GeoJSON export (:func:`write_geojson`).

A ``FeatureCollection`` that QuPath 0.4+ imports (*File > Import objects from file*) and
0.3 reads too (*File > Object data... > Import objects*): per cell a closed ``Polygon``
ring of its box; ``objectType`` (0.4+) and ``object_type`` (0.3); the classification
(:func:`classification`) ``{"name", "color": [r, g, b], "colorRGB": <packed>}``, a
derived class ``Parent: Child`` as ``Child`` with its ``parentClass``; ``isLocked:
false``; and the ``score`` as a measurement list ``[{"name": "score", "value": s}]``, the
form every version reads.
Written atomically; :func:`~.reader.read_geojson` gives back the same boxes, labels,
scores and colours.
"""
import json
import math
from typing import Mapping, Sequence

from ..atomic import write_atomic
from .classes import default_color, packed_argb, split_names
from .objects import Color, QuPathObject

#: Object types :func:`write_geojson` writes.
WRITABLE_TYPES = ('annotation', 'detection', 'cell')


def write_geojson(path, cells: Sequence[QuPathObject], colors: Mapping[str, Color],
                  object_type: str = 'detection') -> None:
    """Write ``cells`` as a QuPath FeatureCollection (module doc), atomically.

    Args:
        path: output ``.geojson`` file (parent directories are created); it appears
            complete or not at all.
        cells: the cells; each becomes a closed Polygon ring of its box.
        colors: class name -> RGB; a class without one gets
            :func:`~.classes.default_color`.
        object_type: ``detection`` (model output), ``annotation`` or ``cell``. (An
            unclassified ``annotation`` rectangle reads back as a region, not a cell.)
    """
    if object_type not in WRITABLE_TYPES:
        raise ValueError(f'object_type must be one of {", ".join(WRITABLE_TYPES)}, got '
                         f'{object_type!r}')
    features = [_feature(cell, i, colors, object_type) for i, cell in enumerate(cells)]
    write_atomic(path, json.dumps(dict(type='FeatureCollection', features=features),
                                  allow_nan=False))


def _feature(cell, index, colors, object_type):
    """The GeoJSON feature of cell number ``index``."""
    x0, y0, x1, y1 = (float(v) for v in cell.box)
    if not (math.isfinite(x0 + y0 + x1 + y1) and x1 > x0 and y1 > y0):
        raise ValueError(f'cell {index}: box {list(cell.box)} must be finite with '
                         'x1 > x0 and y1 > y0')
    properties = dict(objectType=object_type, object_type=object_type)
    if cell.label is not None:
        properties['classification'] = classification(str(cell.label), colors)
    properties['isLocked'] = False
    if cell.score is not None:
        properties['measurements'] = [dict(name='score', value=float(cell.score))]
    ring = [[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]
    return dict(type='Feature', geometry=dict(type='Polygon', coordinates=[ring]),
                properties=properties)


def classification(label, colors) -> dict:
    """The ``classification`` of class ``label`` that QuPath 0.3 and 0.4+ read with its
    colour (``colors[label]``, else :func:`~.classes.default_color`).

    ``color`` ``[r, g, b]`` is what 0.4+ writes, ``colorRGB`` (QuPath's packed signed
    32-bit ARGB, :func:`~.classes.packed_argb`) the field 0.2/0.3 read; with it, 0.4+
    reads the classification as 0.3 does, as the ``PathClass`` fields ``name``,
    ``colorRGB`` and ``parentClass``, so a derived class ``'Tumor: Positive'`` is
    ``Positive`` with the ``parentClass`` ``Tumor`` (in the same form).
    """
    *parents, name = split_names(label) or (label, )
    color = [int(c) for c in colors.get(label) or default_color(label)]
    result = dict(name=name, color=color, colorRGB=packed_argb(color))
    if parents:
        result['parentClass'] = classification(': '.join(parents), colors)
    return result
