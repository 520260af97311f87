"""QuPath exports, images and slides for tests (nothing is downloaded).

* :data:`FORMS` (``tests/fixtures/qupath/``): one hand-written export per form QuPath
  0.2-0.6 writes, from its format and parser (qupath-core ``io/GsonTools``,
  ``io/QuPathTypeAdapters`` / ``io/PathObjectTypeAdapters``, ``io/ROITypeAdapters``,
  ``objects/classes/PathClass``, ``regions/ImagePlane``); every form is drawn on a
  :data:`FORM_SIZE` image. :func:`gzip_export` and :func:`zip_export` give the
  ``.geojson.gz`` and ``.zip`` files of QuPath's compressed exports.
* :func:`feature` builds one GeoJSON feature in one of the three QuPath styles
  (:data:`STYLES`) from a geometry of :func:`point`, :func:`multipoint`, :func:`rect` or
  :func:`multirect`; :func:`write_features` writes them as a FeatureCollection, a bare
  list or a single Feature.
* :func:`noise_image` gives RGB noise in [30, 200] and :func:`paint_cells` dark square
  "nuclei" on it, so a test can check that pixels land where they should.
* :func:`write_pyramid_tiff` writes a tiled, zlib-compressed pyramidal TIFF that
  OpenSlide opens as a generic tiled slide (also usable by whole-slide inference tests).
"""
import gzip
import json
import zipfile
from pathlib import Path

import cv2
import numpy as np
import tifffile

#: The hand-written exports, one per form.
FORMS = Path(__file__).parent / 'fixtures' / 'qupath'
#: ``(width, height)`` of the image every form is drawn on.
FORM_SIZE = (400, 300)

#: QuPath GeoJSON styles: 0.4/0.5 (objectType, classification color [r, g, b]), 0.3
#: (object_type, classification colorRGB as a signed ARGB int) and 0.2 (the object type
#: as the feature id, isLocked, colorRGB).
STYLES = ('0.4', '0.3', '0.2')
LEGACY_IDS = dict(annotation='PathAnnotationObject', detection='PathDetectionObject',
                  cell='PathCellObject')


def point(x, y):
    return dict(type='Point', coordinates=[x, y])


def multipoint(points):
    return dict(type='MultiPoint', coordinates=[list(p) for p in points])


def _ring(x0, y0, x1, y1):
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]


def rect(x0, y0, x1, y1, hole=None):
    """A rectangular Polygon, optionally with a rectangular hole ``(x0, y0, x1, y1)``."""
    rings = [_ring(x0, y0, x1, y1)] + ([_ring(*hole)] if hole else [])
    return dict(type='Polygon', coordinates=rings)


def multirect(*boxes):
    return dict(type='MultiPolygon', coordinates=[[_ring(*box)] for box in boxes])


def signed_argb(rgb):
    """QuPath's packed colour: opaque ARGB as a signed 32-bit integer."""
    r, g, b = rgb
    packed = (255 << 24) | (r << 16) | (g << 8) | b
    return packed - (1 << 32)


def feature(geometry, object_type='annotation', name=None, color=(200, 0, 0),
            style='0.4', nucleus=None, score=None):
    """One QuPath feature of ``style`` (:data:`STYLES`)."""
    properties = dict(isLocked=False)
    if style == '0.4':
        properties['objectType'] = object_type
    elif style == '0.3':
        properties['object_type'] = object_type
    if name is not None:
        properties['classification'] = (dict(name=name, color=list(color))
                                        if style == '0.4'
                                        else dict(name=name, colorRGB=signed_argb(color)))
    if score is not None:
        properties['measurements'] = (dict(score=score) if style == '0.4'
                                      else [dict(name='score', value=score)])
    result = dict(type='Feature',
                  id=LEGACY_IDS[object_type] if style == '0.2' else 'a1b2c3d4',
                  geometry=geometry)
    if nucleus is not None:
        result['nucleusGeometry'] = nucleus
    result['properties'] = properties
    return result


def write_features(path, features, form='collection'):
    """Write features as a ``collection``, a bare ``list`` or a ``single`` Feature."""
    content = dict(collection=lambda: dict(type='FeatureCollection', features=features),
                   list=lambda: features,
                   single=lambda: features[0])[form]()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(content, indent=1))
    return Path(path)


def gzip_export(text_path, path):
    """``path`` (``.geojson.gz``): the export ``text_path`` gzip-compressed, as QuPath's
    *Compression: gzip* writes it."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(gzip.compress(Path(text_path).read_bytes()))
    return Path(path)


def zip_export(text_path, path):
    """``path`` (``.zip``) holding ``text_path`` as ``<stem>.geojson``, the entry name
    QuPath's ``PathIO.exportObjectsAsGeoJSON`` gives a zip export."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(Path(path).stem + '.geojson', Path(text_path).read_text())
    return Path(path)


def noise_image(rng, height, width):
    """RGB noise in [30, 200]."""
    return rng.integers(30, 201, (height, width, 3), dtype=np.uint8)


def paint_cells(image, points_xy, radius=4, shade=(20, 10, 60)):
    """Dark squares of side ``2 * radius`` centred on each ``(x, y)`` point."""
    for x, y in points_xy:
        x, y = int(x), int(y)
        image[max(0, y - radius):y + radius, max(0, x - radius):x + radius] = shade
    return image


def write_png(path, image_rgb):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), np.ascontiguousarray(image_rgb[..., ::-1]))
    return Path(path)


def write_pyramid_tiff(path, image_rgb_uint8, levels=3, tile=256):
    """A tiled (``tile`` px, zlib) pyramidal RGB TIFF: level ``k`` halves level ``k-1``.

    Each level is a top-level page (reduced-resolution pages marked as such), the layout
    OpenSlide reads as a generic tiled TIFF; tifffile reads level 0 as the first page.
    """
    level = np.ascontiguousarray(image_rgb_uint8)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with tifffile.TiffWriter(path) as tif:
        for k in range(levels):
            tif.write(level, tile=(tile, tile), photometric='rgb', compression='zlib',
                      subfiletype=1 if k else 0, metadata=None)
            height, width = level.shape[:2]
            level = cv2.resize(level, (max(1, width // 2), max(1, height // 2)),
                               interpolation=cv2.INTER_AREA)
    return Path(path)
