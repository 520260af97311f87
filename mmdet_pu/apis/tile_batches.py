"""Tiles of a slide as batches of model inputs, read ahead by a background thread.

:func:`tile_batches` reads the windows of a slide level in a reader thread and queues
them as batches, at most ``prefetch`` batches ahead of the model, so memory follows the
batch, never the slide; :func:`tile_converter` turns each RGB tile into the tensor the
config's test pipeline would give (resampled to the training resolution, resized,
channel order), :func:`tile_sample` its metainfo.
"""
import queue
import threading

import cv2
import numpy as np
import torch

from cellio.slides import SlideReader
from mmdet.structures import DetDataSample
from .slide_model import InputFormat


class _Failure:
    """An error of the reader thread, raised by the consumer."""

    def __init__(self, error):
        self.error = error


_DONE = object()


def tile_batches(reader: SlideReader, level: int, windows, batch_size: int, to_input,
                 prefetch: int = 2):
    """Yield ``(inputs, windows)`` batches, read by a background thread.

    The thread reads the windows' pixels (``reader.read_region``), converts each with
    ``to_input`` and queues full batches; at most ``prefetch`` batches wait in the
    queue, so at most ``prefetch + 2`` batches of tiles exist at any time (queued, being
    read, being predicted). An error of the reader is raised here. Close the generator
    (``contextlib.closing``) to stop the thread early.
    """
    if batch_size < 1 or prefetch < 1:
        raise ValueError(f'batch_size and prefetch must be >= 1, got {batch_size}, '
                         f'{prefetch}')
    batches = queue.Queue(maxsize=prefetch)
    stop = threading.Event()

    def put(item):
        while not stop.is_set():
            try:
                batches.put(item, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    def produce():
        try:
            for start in range(0, len(windows), batch_size):
                chunk = windows[start:start + batch_size]
                inputs = [to_input(reader.read_region(level, *window)) for window in chunk]
                if not put((inputs, chunk)):
                    return
            put(_DONE)
        except BaseException as err:  # handed to the consumer, which raises it
            put(_Failure(err))

    thread = threading.Thread(target=produce, name='slide-tile-reader', daemon=True)
    thread.start()
    try:
        while True:
            item = batches.get()
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item
    finally:
        stop.set()
        thread.join()


def tile_converter(fmt: InputFormat, resample=1.0):
    """RGB tile -> the packed CHW uint8 tensor the test pipeline would give, after
    resampling by ``resample`` to the training resolution: one resize by
    ``resample * fmt.scale_factor``, area-averaged when the resampling shrinks the tile,
    bilinear otherwise (as the pipeline's ``Resize``)."""
    factor = resample * fmt.scale_factor
    interpolation = cv2.INTER_AREA if resample != 1.0 and factor < 1 else cv2.INTER_LINEAR

    def to_input(rgb):
        if factor != 1.0:
            h, w = rgb.shape[:2]
            rgb = cv2.resize(rgb, (max(1, round(w * factor)), max(1, round(h * factor))),
                             interpolation=interpolation)
        if fmt.channel_order == 'bgr':
            rgb = rgb[..., ::-1]
        return torch.from_numpy(np.ascontiguousarray(rgb.transpose(2, 0, 1)))
    return to_input


def tile_sample(tensor, window):
    """Metainfo of one tile as the test pipeline's ``PackDetInputs`` would give it."""
    _, _, w, h = window
    height, width = tensor.shape[-2:]
    return DetDataSample(metainfo=dict(img_shape=(height, width), ori_shape=(h, w),
                                       scale_factor=(width / w, height / h)))
