"""QuPath's classes: their names and colours in every JSON form, and the role of an
annotation polygon by its class.

Forms of ``properties.classification`` (qupath-core ``io/GsonTools``
``PathClassTypeAdapter``, ``objects/classes/PathClass``): ``null`` or ``{}``
(unclassified); a string (``"Tumor: Positive"``); ``{"name": ..., "color": [r, g, b(,
a)]}`` or ``{"names": [...], "color": ...}`` (0.4+); ``{"name": ..., "colorRGB": <signed
ARGB int>}`` with ``parentClass`` (the same form) for a derived class (0.2/0.3). A derived
class is named ``"Parent: Child"`` (QuPath's display name). A colour that is not RGB /
RGBA in 0..255 or a packed integer is dropped with a note.

Roles (:func:`annotation_role`): regions (``Region*``, unclassified), ignored areas
(QuPath's ``Ignore*`` and other ``*`` classes) and cells.
"""
import colorsys
import zlib

from .fields import is_int, short
from .objects import Color

#: Prefix (case-insensitive) of the annotation classes that mark regions (``Region*``).
REGION_CLASS_PREFIX = 'region'
#: QuPath's separator of the names of a derived class (``PathClass.DELIMITER``).
CLASS_DELIMITER = ':'


def is_region_class(label) -> bool:
    """Whether ``label`` names a region class: it starts with ``Region`` (any case),
    like QuPath's built-in ``Region*``."""
    return label is not None and label.lower().startswith(REGION_CLASS_PREFIX)


def is_ignored_class(label) -> bool:
    """QuPath's ``PathClassTools.isIgnoredClass`` for a classified object: the class's
    own (last) name ends with ``*`` (``Ignore*``, ``Artefact*``, ...); region classes
    (:func:`is_region_class`) are not ignored."""
    return (label is not None and not is_region_class(label)
            and label.split(CLASS_DELIMITER)[-1].strip().endswith('*'))


def annotation_role(label, cell_classes=None, region_classes=()) -> str:
    """What an annotation polygon of class ``label`` is: ``'region'``, ``'ignored'`` (an
    area to leave out) or ``'cell'``.

    In order: unclassified or in ``region_classes``: region; in ``cell_classes``: cell;
    a region class (``Region*``): region; an ignored class (``Ignore*``, any name
    ending with ``*``): ignored; with ``cell_classes`` given, any other class: region;
    without, any other class: cell.
    """
    if label is None or label in region_classes:
        return 'region'
    if cell_classes is not None and label in cell_classes:
        return 'cell'
    if is_region_class(label):
        return 'region'
    if is_ignored_class(label):
        return 'ignored'
    return 'region' if cell_classes is not None else 'cell'


def default_color(name) -> Color:
    """A stable colour for a class without one: a hue from the CRC32 of its name."""
    hue = (zlib.crc32(str(name).encode('utf-8')) % 360) / 360.0
    return tuple(int(round(255 * c)) for c in colorsys.hsv_to_rgb(hue, 0.75, 0.9))


def packed_argb(rgb) -> int:
    """QuPath's packed colour of ``(r, g, b)`` (``ColorTools.makeRGB``): opaque ARGB as a
    signed 32-bit integer, e.g. ``(220, 20, 60)`` -> ``-2354116``."""
    r, g, b = (int(c) for c in rgb)
    return ((255 << 24) | (r << 16) | (g << 8) | b) - (1 << 32)


def split_names(text):
    """``PathClass.fromString``: the names of ``'Tumor: Positive'``, stripped; ``()`` when
    there is none."""
    names = tuple(name.strip() for name in text.split(CLASS_DELIMITER))
    return () if not any(names) else tuple(name for name in names if name)


def class_names(value, at, notes):
    """``(names, rgb or None)`` of a classification in any of QuPath's forms (module
    doc); ``at`` names the field in errors and ``notes`` (a list) gets what is ignored."""
    if value is None:
        return (), None
    if isinstance(value, str):
        return split_names(value), None
    if not isinstance(value, dict):
        raise ValueError(f'{at}: expected an object or a string, got '
                         f'{type(value).__name__}')
    if not value:
        return (), None  # QuPath's serialised NULL_CLASS: unclassified
    if 'colorRGB' in value or 'parentClass' in value:  # 0.2/0.3: the PathClass fields
        parent = value.get('parentClass')
        names = class_names(parent, f'{at}.parentClass', notes)[0] if parent else ()
        name = value.get('name')
        if name is not None and not isinstance(name, str):
            raise ValueError(f'{at}.name: expected a string, got {name!r}')
        names += split_names(name) if name else ()
        return names, _packed_color(value.get('colorRGB'), f'{at}.colorRGB', notes)
    name, names = value.get('name'), value.get('names')
    if isinstance(name, str):
        parsed = split_names(name)
    elif isinstance(names, list) and all(isinstance(n, str) for n in names):
        parsed = tuple(n.strip() for n in names if n.strip())
    elif name is None and names is None:
        parsed = ()  # QuPath's PathClassProxy without names: unclassified
    else:
        raise ValueError(f'{at}: expected a "name" string or a "names" list of strings, '
                         f'got {short(value)}')
    return parsed, _color(value.get('color'), f'{at}.color', notes)


def _color(value, at, notes):
    """RGB of ``[r, g, b]``, ``[r, g, b, a]`` (alpha last) or a packed integer."""
    if value is None:
        return None
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if is_int(value):
        return _packed_color(value, at, notes)
    if isinstance(value, list) and len(value) in (3, 4) and all(
            is_int(c) and 0 <= c <= 255 for c in value):
        return tuple(int(c) for c in value[:3])
    notes.append(f'{at}: {short(value)} is not [r, g, b(, a)] in 0..255; colour ignored')
    return None


def _packed_color(value, at, notes):
    """RGB of a packed (A)RGB integer."""
    if value is None:
        return None
    if not is_int(value):
        notes.append(f'{at}: {short(value)} is not a packed colour integer; ignored')
        return None
    packed = int(value)
    return (packed >> 16) & 255, (packed >> 8) & 255, packed & 255
