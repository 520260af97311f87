"""QuPath GeoJSON (QuPath 0.2-0.6): cells, regions and ignored areas, read and written.

* :mod:`.objects` -- what an export holds: :class:`QuPathObject` (a cell),
  :class:`Region` (a region or ignored area), :class:`Skipped`, :class:`QuPathFile`;
* :mod:`.naming` -- which file is an export and which image it belongs to
  (:func:`export_stem`, :func:`qupath_stem`, :func:`match_exports`);
* :mod:`.classes` -- class names and colours in every form, the role of an annotation
  polygon by its class (:func:`annotation_role`);
* :mod:`.fields` -- a feature's geometry, plane and score;
* :mod:`.parser` -- a whole export, every feature accounted for
  (:func:`parse_geojson`);
* :mod:`.reader` -- an export for one image: one plane, inside the image, in level-0
  pixels (:func:`read_geojson`);
* :mod:`.writer` -- cells as an export QuPath 0.3 and 0.4+ import
  (:func:`write_geojson`).

The geometry of regions (points inside, pixel masks, boxes) is :mod:`cellio.geometry`.
"""
from .classes import (annotation_role, default_color, is_ignored_class, is_region_class,
                      packed_argb)
from .naming import (EXPORT_SUFFIXES, STRICT_EXPORT_SUFFIXES, export_stem, find_images,
                     match_exports, qupath_stem)
from .objects import (AmbiguousClassError, QuPathFile, QuPathObject, Region, Skipped,
                      describe_oversized)
from .parser import parse_geojson
from .reader import PlaneError, check_first_plane, drop_outside, read_geojson, shift
from .writer import write_geojson

__all__ = [
    'AmbiguousClassError', 'EXPORT_SUFFIXES', 'PlaneError', 'QuPathFile', 'QuPathObject',
    'Region', 'STRICT_EXPORT_SUFFIXES', 'Skipped', 'annotation_role', 'check_first_plane',
    'default_color', 'describe_oversized', 'drop_outside', 'export_stem', 'find_images',
    'is_ignored_class', 'is_region_class', 'match_exports', 'packed_argb', 'parse_geojson',
    'qupath_stem', 'read_geojson', 'shift', 'write_geojson'
]
