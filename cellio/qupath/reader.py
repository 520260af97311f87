"""Read a QuPath export for one image (:func:`read_geojson`): the parser's objects on one
plane, inside QuPath's image, in the image's level-0 pixels.

QuPath's frame is the pixels of its image, origin at the top-left corner. On a slide
that QuPath crops to its OpenSlide bounds
(:meth:`cellio.slides.SlideReader.qupath_frame`) QuPath's origin is the bounds'
corner: adding it (``offset``) maps QuPath's frame to level-0 pixels.

The filters, each moving what it leaves out to ``skipped`` with the reason:

* :func:`drop_outside`: objects that lie outside QuPath's ``width x height`` image;
* the plane (``plane``): objects of other planes (``regions/ImagePlane``); without a
  plane, objects on several planes are a :class:`PlaneError`;
* :func:`shift`: adds the offset to every coordinate.

:func:`check_first_plane` is the image readers' rule: they read the first plane
(``z = t = 0``) only.
"""
from ..geometry import box_meets_image
from .objects import QuPathFile, Skipped
from .parser import parse_geojson

#: How a caller of :func:`read_geojson` chooses a plane, for :meth:`PlaneError.message`.
PLANE_ARGUMENT = 'plane=({z}, {t})'


class PlaneError(ValueError):
    """The objects of an export lie on planes that cannot be read as asked.

    Attributes:
        display: the file.
        problem: what is wrong, e.g. ``the objects lie on 2 planes (z=0,t=0, z=1,t=0)``.
        remedy: what to do, ``{choice}`` standing for the plane to choose.
        choice: ``(z, t)`` of that plane (``('z', 't')`` when any will do).
    """

    def __init__(self, display, problem, remedy, choice):
        self.display, self.problem = display, problem
        self.remedy, self.choice = remedy, choice
        super().__init__(self.message(PLANE_ARGUMENT))

    def message(self, option) -> str:
        """The message, ``option`` saying how a plane is chosen, with ``{z}`` and ``{t}``
        (e.g. ``'--plane {z},{t}'``)."""
        choice = option.format(z=self.choice[0], t=self.choice[1])
        return f'{self.display}: {self.problem}; {self.remedy.format(choice=choice)}'


def read_geojson(path, box_size: float = 32, cell_classes=None, region_classes=(),
                 image_size=None, offset=(0, 0), base_class=False, max_cell_size=None,
                 unclassified_polygons='region', plane=None, display=None) -> QuPathFile:
    """The cells, regions and ignored areas of a QuPath export (:mod:`.parser`) that lie
    on ``plane`` and inside ``image_size``, moved by ``offset``.

    Args:
        path: a ``.geojson``, ``.json``, ``.geojson.gz``, ``.json.gz`` or ``.zip`` file.
        box_size, cell_classes, region_classes, base_class, max_cell_size,
            unclassified_polygons, display: as :func:`~.parser.parse_geojson`.
        image_size: ``(width, height)`` of the image in QuPath's frame; objects that lie
            outside it are skipped. ``None``: no check.
        offset: ``(x, y)`` added to every coordinate returned (QuPath's origin in level-0
            pixels).
        plane: ``(z, t)`` to read; objects of other planes are skipped. ``None``: every
            feature must lie on one plane.

    Raises:
        ValueError: the file is not QuPath GeoJSON (the message names the file, the
            feature and the field).
        AmbiguousClassError: annotation polygons too large for the cells they would be.
        PlaneError: the features lie on several planes and ``plane`` is ``None``.
    """
    name = str(path) if display is None else display
    result = parse_geojson(path, box_size, cell_classes, region_classes, base_class,
                           max_cell_size, unclassified_polygons, name)
    _select_plane(result, plane, name)
    if image_size is not None:
        drop_outside(result, image_size)
    if tuple(offset) != (0, 0):
        shift(result, *offset)
    return result


def _select_plane(result, plane, name):
    """Skip the objects of other planes than ``plane``; without one, raise a
    :class:`PlaneError` when the objects lie on several."""
    if plane is None:
        if len(result.planes) > 1:
            listed = ', '.join(f'z={z},t={t}' for z, t in result.planes)
            raise PlaneError(name, f'the objects lie on {len(result.planes)} planes '
                                   f'({listed})', 'choose one ({choice})', ('z', 't'))
        return
    plane = tuple(plane)
    _filter(result, lambda cell: cell.plane == plane, lambda area: area.plane == plane,
            lambda item: f'on plane z={item.plane[0]},t={item.plane[1]} (not the chosen '
                         f'z={plane[0]},t={plane[1]})')


def check_first_plane(content: QuPathFile, display) -> None:
    """Raise a :class:`PlaneError` when an object lies on another plane than the first
    (``z = t = 0``), the only one the image readers read."""
    planes = {cell.plane for cell in content.cells} | {
        area.plane for area in content.regions + content.ignored_areas}
    other = sorted(planes - {(0, 0)})
    if other:
        z, t = other[0]
        raise PlaneError(display, f'objects on plane z={z},t={t}, but only the first '
                                  'plane (z=0, t=0) of the image is read',
                         'export that plane as an image of its own, or choose {choice}',
                         (0, 0))


def drop_outside(result: QuPathFile, image_size) -> None:
    """Skip the objects that lie outside the ``width x height`` image: a point outside
    ``[0, width) x [0, height)``, a box or area sharing no area with it."""
    width, height = image_size

    def cell_inside(cell):
        if cell.point is None:
            return box_meets_image(cell.box, width, height)
        x, y = cell.point
        return 0 <= x < width and 0 <= y < height

    _filter(result, cell_inside, lambda area: box_meets_image(area.bounds, width, height),
            lambda item: 'outside the image')


def shift(result: QuPathFile, dx, dy) -> None:
    """Move every cell and area by ``(dx, dy)``."""
    result.cells = [cell.shifted(dx, dy) for cell in result.cells]
    result.regions = [area.shifted(dx, dy) for area in result.regions]
    result.ignored_areas = [area.shifted(dx, dy) for area in result.ignored_areas]


def _filter(result, keep_cell, keep_area, reason):
    """Move the cells and areas that fail ``keep_*`` to ``skipped`` (one entry per cell,
    one per feature whose areas all fail), with ``reason(item)``."""
    kept = []
    for cell in result.cells:
        if keep_cell(cell):
            kept.append(cell)
        else:
            result.skipped.append(Skipped(cell.feature, cell.object_type, reason(cell)))
    result.cells = kept
    for attribute in ('regions', 'ignored_areas'):
        areas = getattr(result, attribute)
        kept = [area for area in areas if keep_area(area)]
        setattr(result, attribute, kept)
        features = {area.feature for area in kept}
        for area in areas:
            if area.feature not in features:
                features.add(area.feature)
                result.skipped.append(Skipped(area.feature, 'annotation', reason(area)))
