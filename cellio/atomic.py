"""Atomic output: a file or a directory appears complete or not at all.

Every writer of the project goes through here (datasets, reports, slide outputs,
estimates), so a reader never sees a half-written file and an interrupted run leaves
nothing behind:

* :func:`atomic_open` -- a file object on a temporary sibling, renamed over the target
  (``os.replace``) when the ``with`` block ends without an exception, deleted otherwise;
* :func:`write_atomic`, :func:`write_json_atomic`, :func:`write_image_atomic` -- one
  call for text or bytes, JSON, and an RGB image;
* :class:`AtomicOutput` -- the same for a whole directory.

Parent directories are created. Files are created with mode 0644 and directories with
0755 (``tempfile`` makes private ones).
"""
import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np


def _temp_sibling(path: Path, suffix: str) -> Path:
    """A new, empty temporary file next to ``path`` (same filesystem, so rename works)."""
    fd, tmp = tempfile.mkstemp(prefix=f'.{path.name}.', suffix=suffix, dir=path.parent)
    os.close(fd)
    os.chmod(tmp, 0o644)
    return Path(tmp)


@contextlib.contextmanager
def atomic_open(path, mode: str = 'w', **kwargs):
    """``open(path, mode)`` through a temporary sibling renamed into place on success.

    Args:
        path: the final file; its parent directories are created.
        mode: ``'w'`` (text) or ``'wb'`` (bytes).
        **kwargs: passed to :func:`open` (``newline``, ``encoding``).
    """
    if mode not in ('w', 'wb'):
        raise ValueError(f"atomic_open: mode must be 'w' or 'wb', got {mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_sibling(path, '.tmp')
    try:
        with open(tmp, mode, **kwargs) as f:
            yield f
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path, data) -> None:
    """Write ``data`` (``str`` or ``bytes``) to ``path`` completely or not at all."""
    with atomic_open(path, 'wb' if isinstance(data, bytes) else 'w') as f:
        f.write(data)


def write_json_atomic(path, obj, indent=None) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (``indent`` as :func:`json.dump`)."""
    write_atomic(path, json.dumps(obj, indent=indent))


def write_image_atomic(path, array_rgb) -> None:
    """Write an RGB ``uint8`` array (H, W, 3) to ``path`` atomically.

    The format follows the suffix of ``path`` (PNG for the dataset layout).
    """
    import cv2

    path = Path(path)
    array_rgb = np.asarray(array_rgb)
    if array_rgb.dtype != np.uint8 or array_rgb.ndim != 3 or array_rgb.shape[2] != 3:
        raise ValueError(f'{path}: expected an RGB uint8 array of shape (H, W, 3), got '
                         f'{array_rgb.dtype} {array_rgb.shape}')
    ok, encoded = cv2.imencode(path.suffix, np.ascontiguousarray(array_rgb[..., ::-1]))
    if not ok:
        raise ValueError(f'{path}: OpenCV cannot encode images as {path.suffix!r}')
    write_atomic(path, encoded.tobytes())


def _overlaps(a: Path, b: Path) -> bool:
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
        os.chmod(self.tmp_dir, 0o755)
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
