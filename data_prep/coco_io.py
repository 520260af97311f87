"""COCO dictionaries and atomic file output.

* :class:`CocoBuilder` assembles a COCO detection dict (category ids ``1..C`` in the
  order given, image and annotation ids from 1).
* :func:`write_json_atomic` / :func:`write_image_atomic` write one file through a
  temporary sibling and ``os.replace``, so a reader never sees a half-written file.
* :class:`AtomicOutput` does the same for a whole output directory: everything is
  written into a sibling temporary directory that is renamed into place only when the
  ``with`` block finishes without an exception.
"""
import json
import os
import shutil
import tempfile
from pathlib import Path

import cv2
import numpy as np


class CocoBuilder:
    """Incrementally build a COCO detection dict.

    Args:
        categories: category names; they get ids ``1..len(categories)`` in this order.
    """

    def __init__(self, categories):
        if not categories:
            raise ValueError('CocoBuilder needs at least one category name')
        self.categories = [dict(id=i + 1, name=str(name))
                           for i, name in enumerate(categories)]
        self.images = []
        self.annotations = []

    def add_image(self, file_name, width, height, source, x0=0, y0=0, **extra):
        """Add an image entry and return its id.

        ``source`` is the raw image path relative to ``--src``; ``x0``/``y0`` the offset
        of this image (tile) in the source image. ``extra`` keys (e.g. ``tiles``) are
        stored on the entry as given.
        """
        image_id = len(self.images) + 1
        self.images.append(dict(
            id=image_id, file_name=str(file_name), width=int(width), height=int(height),
            source=str(source), x0=int(x0), y0=int(y0), **extra))
        return image_id

    def add_annotation(self, image_id, bbox_xywh, category_id, point=None, **extra):
        """Add an annotation and return its id.

        ``bbox_xywh`` is ``[x, y, w, h]`` in pixels of the image; ``area`` is ``w * h``
        and ``iscrowd`` 0. ``point`` (``[x, y]``) is stored only when given. ``extra``
        keys (e.g. ``score``) are stored on the annotation as given.
        """
        if not 1 <= image_id <= len(self.images):
            raise ValueError(f'add_annotation: unknown image_id {image_id}')
        if not 1 <= category_id <= len(self.categories):
            raise ValueError(f'add_annotation: category_id {category_id} is not in '
                             f'1..{len(self.categories)}')
        x, y, w, h = (float(v) for v in bbox_xywh)
        if w <= 0 or h <= 0:
            raise ValueError(f'add_annotation: empty box {[x, y, w, h]} on image '
                             f'{self.images[image_id - 1]["file_name"]}')
        ann = dict(id=len(self.annotations) + 1, image_id=int(image_id),
                   category_id=int(category_id), bbox=[x, y, w, h], area=w * h,
                   iscrowd=0)
        if point is not None:
            ann['point'] = [float(point[0]), float(point[1])]
        ann.update(extra)
        self.annotations.append(ann)
        return ann['id']

    def to_dict(self):
        """The COCO dict (``images``, ``annotations``, ``categories``)."""
        return dict(images=self.images, annotations=self.annotations,
                    categories=self.categories)


def _temp_sibling(path, suffix):
    """A new, empty temporary file next to ``path`` (same filesystem, so rename works)."""
    fd, tmp = tempfile.mkstemp(prefix=f'.{path.name}.', suffix=suffix, dir=path.parent)
    os.close(fd)
    os.chmod(tmp, 0o644)  # mkstemp creates private files; outputs are ordinary files
    return Path(tmp)


def write_json_atomic(path, obj):
    """Write ``obj`` as JSON to ``path`` atomically (creates parent directories)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_sibling(path, '.tmp')
    try:
        with open(tmp, 'w') as f:
            json.dump(obj, f)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_image_atomic(path, array_rgb):
    """Write an RGB ``uint8`` array (H, W, 3) to ``path`` atomically.

    The format follows the suffix of ``path`` (PNG for the dataset layout); parent
    directories are created.
    """
    path = Path(path)
    array_rgb = np.asarray(array_rgb)
    if array_rgb.dtype != np.uint8 or array_rgb.ndim != 3 or array_rgb.shape[2] != 3:
        raise ValueError(f'{path}: expected an RGB uint8 array of shape (H, W, 3), got '
                         f'{array_rgb.dtype} {array_rgb.shape}')
    path.parent.mkdir(parents=True, exist_ok=True)
    ok, encoded = cv2.imencode(path.suffix, np.ascontiguousarray(array_rgb[..., ::-1]))
    if not ok:
        raise ValueError(f'{path}: OpenCV cannot encode images as {path.suffix!r}')
    tmp = _temp_sibling(path, path.suffix)
    try:
        tmp.write_bytes(encoded.tobytes())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _overlaps(a, b):
    """Whether one of two resolved paths is equal to or inside the other."""
    return a == b or a in b.parents or b in a.parents


class AtomicOutput:
    """Write an output directory all at once or not at all.

    ``with AtomicOutput(out_dir) as tmp:`` yields a fresh sibling temporary directory;
    on normal exit it is renamed to ``out_dir``, on an exception it is deleted and
    ``out_dir`` is left as it was.

    Args:
        out_dir: final directory.
        overwrite: replace an existing non-empty ``out_dir`` (only once the new content
            is complete); otherwise an existing non-empty ``out_dir`` is an error.
        protect: paths that must never be written to (e.g. the raw ``--src``
            directory); an ``out_dir`` equal to, inside or containing one is an error.
    """

    def __init__(self, out_dir, overwrite=False, protect=()):
        self.out_dir = Path(out_dir).resolve()
        self.overwrite = overwrite
        for path in protect:
            if path is not None and _overlaps(self.out_dir, Path(path).resolve()):
                raise ValueError(f'output directory {self.out_dir} overlaps the protected '
                                 f'(raw data) directory {Path(path).resolve()}')
        self.tmp_dir = None

    def __enter__(self):
        if self.out_dir.exists() and any(self.out_dir.iterdir()) and not self.overwrite:
            raise FileExistsError(f'{self.out_dir} exists and is not empty; choose '
                                  'another output directory or pass overwrite=True '
                                  '(--overwrite)')
        self.out_dir.parent.mkdir(parents=True, exist_ok=True)
        self.tmp_dir = Path(tempfile.mkdtemp(prefix=f'.{self.out_dir.name}.tmp-',
                                             dir=self.out_dir.parent))
        os.chmod(self.tmp_dir, 0o755)  # mkdtemp creates a private directory
        return self.tmp_dir

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            shutil.rmtree(self.tmp_dir, ignore_errors=True)
            return False
        old = None
        if self.out_dir.exists():
            old = Path(tempfile.mkdtemp(prefix=f'.{self.out_dir.name}.old-',
                                        dir=self.out_dir.parent))
            os.replace(self.out_dir, old / 'content')
        os.replace(self.tmp_dir, self.out_dir)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return False
