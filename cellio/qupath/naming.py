"""Which file is a QuPath export, and which image it belongs to.

An export belongs to the image in its folder whose name without extension is the
export's stem (:func:`export_stem`), by QuPath's rule (:func:`qupath_stem`, after
``GeneralTools.stripExtension``: ``x.ome.tif``, ``x.ome.tiff`` and ``x.ome.zarr`` lose
the whole multi-part extension, so *Export objects* proposes ``x.geojson``), by the
plain last suffix (``x.ome.geojson``) or is its whole name (``x.svs.geojson``, what a
script that appends ``.geojson`` writes). A ``.geojson`` (``.gz``) without its image, an
export matching two images and an image with two exports are errors; a ``.json`` or
``.zip`` matching no image is unused (QuPath project folders hold other JSON).
"""
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..sources import IMAGE_SUFFIXES

#: Suffixes of QuPath object exports (``PathIO.readObjects``), longest first.
EXPORT_SUFFIXES = ('.geojson.gz', '.json.gz', '.geojson', '.json', '.zip')
#: Exports whose missing image is an error (``.json`` / ``.zip`` may be other files).
STRICT_EXPORT_SUFFIXES = ('.geojson', '.geojson.gz')
#: Multi-part extensions QuPath strips whole (``GeneralTools.getExtension``).
MULTIPART_EXTENSIONS = ('.ome.tiff', '.ome.tif', '.ome.zarr', '.tar.gz')


def export_stem(name) -> Optional[str]:
    """``name`` without its export suffix (:data:`EXPORT_SUFFIXES`, any case), ``None``
    when it has none."""
    lower = name.lower()
    for suffix in EXPORT_SUFFIXES:
        if lower.endswith(suffix) and len(name) > len(suffix):
            return name[:-len(suffix)]
    return None


def qupath_stem(name) -> str:
    """An image name without its extension, by QuPath's ``GeneralTools.stripExtension``."""
    lower = name.lower()
    for extension in MULTIPART_EXTENSIONS:
        if lower.endswith(extension) and len(name) > len(extension):
            return name[:-len(extension)]
    dot = name.rfind('.')
    if dot > 0 and re.fullmatch(r'\.\w*', name[dot:]) and len(name) > dot + 1:
        return name[:dot]
    return name


def find_images(src) -> Dict[str, Path]:
    """``{source: path}`` of the image files below ``src`` (:data:`IMAGE_SUFFIXES`),
    ``source`` being the POSIX path relative to ``src``; sorted."""
    src = Path(src)
    return {p.relative_to(src).as_posix(): p for p in sorted(src.rglob('*'))
            if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()}


def match_exports(src, images) -> Tuple[Dict[Path, str], List[str]]:
    """``({export path: source}, unused exports)``: each export below ``src`` with its
    image of ``images`` (:func:`find_images`), by the module doc's rule.

    Raises:
        ValueError: an orphan ``.geojson`` (``.gz``), an export matching several images
            or an image with several exports (the message names the files).
    """
    src = Path(src)
    by_key = {}
    for source, path in images.items():
        for stem in {qupath_stem(path.name), path.stem, path.name}:
            by_key.setdefault((path.parent, stem), []).append(source)
    exports, unused = {}, []
    for path in sorted(p for p in src.rglob('*') if p.is_file()
                       and export_stem(p.name) is not None):
        sources = by_key.get((path.parent, export_stem(path.name)), [])
        name = path.relative_to(src).as_posix()
        if len(sources) > 1:
            raise ValueError(f'{name}: ambiguous, it matches several images: '
                             f'{", ".join(sources)}; rename the export or the images')
        if sources:
            exports[path] = sources[0]
        elif path.name.lower().endswith(STRICT_EXPORT_SUFFIXES):
            raise ValueError(f'{name}: no image next to it (expected '
                             f'{export_stem(path.name)}<extension> with an extension in '
                             f'{", ".join(IMAGE_SUFFIXES)}; QuPath names the export after '
                             'the image without its extension, e.g. x.ome.tif -> '
                             'x.geojson)')
        else:
            unused.append(name)
    per_image = {}
    for path, source in exports.items():
        per_image.setdefault(source, []).append(path.relative_to(src).as_posix())
    for source, names in per_image.items():
        if len(names) > 1:
            raise ValueError(f'{source}: several exports belong to it ({", ".join(names)}); '
                             'keep one')
    return exports, unused
