"""What a QuPath export holds, once read: cells, regions, ignored areas and skipped
features (:class:`QuPathFile`).

Coordinates are pixels, origin at the image's top-left corner, boxes ``(x0, y0, x1,
y1)``.
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .. import geometry
from ..geometry import Box

Color = Tuple[int, int, int]
Plane = Tuple[int, int]
Ring = Tuple[Tuple[float, float], ...]


@dataclass(frozen=True)
class QuPathObject:
    """One cell.

    Attributes:
        box: ``(x0, y0, x1, y1)``.
        label: classification name, ``None`` if unclassified.
        score: the ``score`` measurement, ``None`` without one.
        point: ``(x, y)`` when the cell came from a point.
        feature: the feature it was read from, e.g. ``'3'`` or ``'3.1'`` (messages).
        object_type: ``annotation``, ``detection`` or ``cell``.
        plane: ``(z, t)``.

    Only ``box``, ``label``, ``score`` and ``point`` are compared.
    """
    box: Box
    label: Optional[str]
    score: Optional[float] = None
    point: Optional[Tuple[float, float]] = None
    feature: Optional[str] = field(default=None, compare=False)
    object_type: str = field(default='annotation', compare=False)
    plane: Plane = field(default=(0, 0), compare=False)

    @classmethod
    def at_point(cls, x, y, box_size, label, **kwargs) -> 'QuPathObject':
        """A cell marked by the point ``(x, y)``: its box is the ``box_size`` square
        centred on it; ``kwargs`` are the other attributes."""
        half = box_size / 2
        return cls((x - half, y - half, x + half, y + half), label, point=(x, y), **kwargs)

    @property
    def anchor(self) -> Tuple[float, float]:
        """Where the cell is: its point, or the centre of its box."""
        if self.point is not None:
            return self.point
        return (self.box[0] + self.box[2]) / 2, (self.box[1] + self.box[3]) / 2

    def shifted(self, dx, dy) -> 'QuPathObject':
        """The same cell moved by ``(dx, dy)``."""
        x0, y0, x1, y1 = self.box
        point = None if self.point is None else (self.point[0] + dx, self.point[1] + dy)
        return QuPathObject((x0 + dx, y0 + dy, x1 + dx, y1 + dy), self.label, self.score,
                            point, self.feature, self.object_type, self.plane)


@dataclass(frozen=True)
class Region:
    """A region or ignored area: one polygon (exterior ring and holes).

    Attributes:
        exterior: the outer ring, ``((x, y), ...)``.
        holes: inner rings.
        label: its class (``None``, ``"Region*"``, ``"Ignore*"``, ...).
        feature: the feature it was read from (not compared).
        plane: ``(z, t)`` (not compared).
    """
    exterior: Ring
    holes: Tuple[Ring, ...] = ()
    label: Optional[str] = None
    feature: Optional[str] = field(default=None, compare=False)
    plane: Plane = field(default=(0, 0), compare=False)

    @classmethod
    def rectangle(cls, box: Box) -> 'Region':
        """An unclassified region that is the box ``(x0, y0, x1, y1)``."""
        x0, y0, x1, y1 = box
        return cls(((x0, y0), (x1, y0), (x1, y1), (x0, y1)))

    @property
    def rings(self) -> Tuple[Ring, ...]:
        """The exterior ring, then the holes."""
        return (self.exterior, *self.holes)

    @property
    def bounds(self) -> Box:
        """``(x0, y0, x1, y1)`` of the exterior ring."""
        return geometry.bounds(self.exterior)

    def contains(self, points_xy):
        """Whether each ``(x, y)`` lies inside the polygon (even-odd rule, holes out)."""
        return geometry.points_in_polygon(points_xy, self.rings)

    def pixel_mask(self, x, y, width, height):
        """``(height, width)`` bool: the pixels of the window at ``(x, y)`` whose centre
        lies inside (the rule of :meth:`contains`)."""
        return geometry.polygon_pixel_mask(self.rings, x, y, width, height)

    def shifted(self, dx, dy) -> 'Region':
        """The same polygon moved by ``(dx, dy)``."""
        def move(ring):
            return tuple((x + dx, y + dy) for x, y in ring)
        return Region(move(self.exterior), tuple(move(h) for h in self.holes), self.label,
                      self.feature, self.plane)


@dataclass(frozen=True)
class Skipped:
    """Objects of one feature that became nothing.

    Attributes:
        feature: the feature, e.g. ``'3'``.
        object_type: its object type (``'not a feature'`` for list items that are none).
        reason: why, e.g. ``'line (ruler)'`` or ``"ignored class 'Ignore*'"``.
        count: objects skipped: the points of a multi-point, else 1.
    """
    feature: str
    object_type: str
    reason: str
    count: int = 1


@dataclass
class QuPathFile:
    """What :func:`~cellio.qupath.read_geojson` found in one export.

    Attributes:
        cells: the cells, in file order (a multi-point gives one cell per point).
        regions: the regions, in file order.
        ignored_areas: the areas to leave out (``Ignore*`` and other ``*`` classes).
        skipped: the features (or points) that became nothing, with the reason.
        colors: class name -> RGB of every classification with a colour.
        features: number of features per object type (children included).
        notes: things read leniently (unknown object type, bad colour, ...).
        planes: the ``(z, t)`` planes of the features with a geometry, sorted.
    """
    cells: List[QuPathObject] = field(default_factory=list)
    regions: List[Region] = field(default_factory=list)
    ignored_areas: List[Region] = field(default_factory=list)
    skipped: List[Skipped] = field(default_factory=list)
    colors: Dict[str, Color] = field(default_factory=dict)
    features: Dict[str, int] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    planes: List[Plane] = field(default_factory=list)


class AmbiguousClassError(ValueError):
    """Annotation polygons that would be cells are larger than a cell.

    Attributes:
        display: the file.
        oversized: ``{class: [(feature, width, height), ...]}``.
        max_cell_size: the limit.
    """

    def __init__(self, display, oversized, max_cell_size):
        self.display, self.oversized, self.max_cell_size = display, oversized, max_cell_size
        super().__init__(f'{display}: {describe_oversized(oversized)} would be cells but '
                         f'are larger than a cell (max_cell_size {max_cell_size:g} px): '
                         'regions (region_classes) or cells (a larger max_cell_size)?')


def describe_oversized(oversized) -> str:
    """``class 'Tumor': 2 annotation polygon(s) (feature 3: 5000x4000 px, ...)``."""
    parts = []
    for label in sorted(oversized):
        feature, width, height = oversized[label][0]
        more = ', ...' if len(oversized[label]) > 1 else ''
        parts.append(f'class {label!r}: {len(oversized[label])} annotation polygon(s) '
                     f'(feature {feature}: {width:g}x{height:g} px{more})')
    return '; '.join(parts)
