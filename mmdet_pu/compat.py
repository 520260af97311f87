"""Checkpoint loading for mmengine 0.10.x under torch >= 2.6.

torch 2.6 made ``torch.load(weights_only=True)`` the default. mmengine 0.10.x calls
``torch.load`` without that argument, and its own checkpoints hold more than tensors: the
message hub's ``HistoryBuffer`` objects (whose state refers to their statistics methods
through ``getattr``) and numpy arrays, scalars and dtypes. Loading them fails, which breaks
``--resume``, ``load_from`` and ``tools/test.py CONFIG CKPT``.

Instead of turning the safety check off, this module re-registers mmengine's loader for
local files so that it keeps ``weights_only=True`` and allows, only while an mmengine
checkpoint is being read, exactly the types mmengine writes. A checkpoint holding anything
else still fails, with torch's message naming the offending global.
"""
import os.path as osp

import numpy as np
import torch
from mmengine.logging import HistoryBuffer
from mmengine.runner.checkpoint import CheckpointLoader

_NUMPY_GLOBALS = [
    np.ndarray,
    np.dtype,
    np._core.multiarray._reconstruct,
    np._core.multiarray.scalar,
] + [getattr(np.dtypes, name) for name in np.dtypes.__all__]

# ``getattr`` rebuilds HistoryBuffer's references to its statistics methods.
_CHECKPOINT_GLOBALS = [HistoryBuffer, getattr] + _NUMPY_GLOBALS


@CheckpointLoader.register_scheme(prefixes='', force=True)
def load_from_local(filename, map_location=None):
    """Load a local checkpoint with ``weights_only=True`` and mmengine's own types."""
    filename = osp.expanduser(filename)
    if not osp.isfile(filename):
        raise FileNotFoundError(f'{filename} can not be found.')
    with torch.serialization.safe_globals(_CHECKPOINT_GLOBALS):
        return torch.load(filename, map_location=map_location, weights_only=True)
