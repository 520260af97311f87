"""A detector ready for slides, and what its config says about reading them.

:func:`init_slide_model` is mmdet's ``init_detector`` (config, ``--cfg-options``,
checkpoint, device) with what slides need on top: the device of this process, the
classes and colours of the outputs, and the training resolution. Importing this module
imports ``mmdet_pu``, so its modules are registered and checkpoints load under
torch >= 2.6 (:mod:`mmdet_pu.compat`) before any model is built.
:func:`input_format` and :func:`slide_defaults` read the config's test pipeline and
test loop.
"""
from dataclasses import dataclass
from typing import Optional

import torch
from mmengine.dist import get_dist_info

from mmdet.apis import init_detector
from cellio.qupath import default_color


@dataclass
class InputFormat:
    """How the config's test pipeline hands images to the model.

    Attributes:
        channel_order: ``'bgr'`` (``LoadImageFromFile``'s default) or ``'rgb'``.
        scale_factor: the test pipeline's ``Resize(scale_factor=...)``; tiles are resized
            by it and the model maps its boxes back (``rescale=True``).
    """
    channel_order: str = 'bgr'
    scale_factor: float = 1.0


def slide_device(device=None) -> str:
    """``device``, else this process's GPU when one is available (``'cuda'``; in a
    process group ``'cuda:<i>'``, the GPU its launcher picked), else ``'cpu'``.

    Raises:
        ValueError: a CUDA device is asked for but torch has none.
    """
    if not device:
        if not torch.cuda.is_available():
            return 'cpu'
        _, world_size = get_dist_info()
        return f'cuda:{torch.cuda.current_device()}' if world_size > 1 else 'cuda'
    if str(device).startswith('cuda') and not torch.cuda.is_available():
        raise ValueError(f'device {device!r}: no CUDA device is available to this torch '
                         f'{torch.__version__} (use cpu)')
    return device


def init_slide_model(config, checkpoint, device=None, cfg_options=None):
    """mmdet's ``init_detector(config, checkpoint, device=..., cfg_options=...)``, with
    the device of :func:`slide_device` and the ``dataset_meta`` of
    :func:`slide_dataset_meta` (the model also has mmdet's ``cfg``: the config). A
    ``FusedEnsemble`` config (``tools/fit_prior.py``'s ``fused/fused_config.py``) loads
    as any detector's.
    """
    # palette=[]: no colours from mmdet (it would build the test dataset to find
    # them); slide_dataset_meta chooses them. cfg_options never None: without options
    # init_detector reads model.backbone, which an ensemble holds under model.detector
    # (building a model initialises no weights; the checkpoint sets them all)
    model = init_detector(str(config), str(checkpoint), palette=[],
                          device=slide_device(device), cfg_options=cfg_options or {})
    model.dataset_meta = slide_dataset_meta(model.cfg, model.dataset_meta)
    return model


def slide_dataset_meta(cfg, checkpoint_meta) -> dict:
    """The ``dataset_meta`` of a slide model: ``classes`` and ``palette`` of the
    config's test dataset ``metainfo``, else of its top-level ``metainfo``, else of
    ``checkpoint_meta`` (``init_detector``'s: the checkpoint's ``dataset_meta``, or
    mmdet's COCO classes when it has none), else ``class<i>``; classes without a
    palette entry get the GeoJSON writer's stable colour of their name
    (:func:`~cellio.qupath.default_color`); ``mpp``, the training resolution
    (:func:`training_mpp`, ``None`` if unknown), and ``scale``, the factor the training
    images were resampled by from their sources (the same way, ``None`` if unknown).

    Raises:
        ValueError: the classes do not match the model's ``num_classes``.
    """
    num_classes, key = classifier_classes(cfg.model)
    meta = next((meta for meta in (_test_dataset(cfg).get('metainfo'), cfg.get('metainfo'),
                                   checkpoint_meta) if meta and meta.get('classes')), {})
    classes = tuple(meta.get('classes') or (f'class{i}' for i in range(num_classes or 1)))
    palette = list(meta.get('palette') or [])
    if num_classes is not None and len(classes) != num_classes:
        raise ValueError(f'{cfg.filename}: metainfo names {len(classes)} classes {classes} '
                         f'but {key} is {num_classes}')
    palette = [tuple(int(v) for v in palette[i]) if i < len(palette)
               else default_color(name) for i, name in enumerate(classes)]
    return dict(classes=classes, palette=palette, mpp=training_mpp(cfg, checkpoint_meta),
                scale=training_mpp(cfg, checkpoint_meta, 'scale'))


def classifier_classes(model_cfg) -> tuple:
    """``(num_classes, key)`` of a detector config: its RoI box head's (Cascade R-CNN:
    the first stage's; all stages classify the same classes) or its dense head's (a
    ``FusedEnsemble``'s members'); ``(None, None)`` when the config names neither."""
    model_cfg = model_cfg.get('detector') or model_cfg
    roi_head = model_cfg.get('roi_head') or {}
    if roi_head.get('bbox_head'):
        bbox_head, key = roi_head['bbox_head'], 'model.roi_head.bbox_head'
        if isinstance(bbox_head, (list, tuple)):
            bbox_head, key = bbox_head[0], key + '[0]'
    else:
        bbox_head, key = model_cfg.get('bbox_head') or {}, 'model.bbox_head'
    num_classes = bbox_head.get('num_classes')
    return num_classes, (f'{key}.num_classes' if num_classes is not None else None)


def training_mpp(cfg, checkpoint_meta, key='mpp') -> Optional[float]:
    """The training resolution (micrometres per pixel): the checkpoint's
    ``dataset_meta['mpp']`` (the training set's metainfo: its images' ``mpp`` or the
    config's ``metainfo.mpp`` at training time), else ``mpp`` of the config's train,
    then test dataset ``metainfo``, then its top-level ``metainfo``; ``None`` if none
    says. ``key='scale'``: the training images' resampling factor, found the same way."""
    for meta in (checkpoint_meta,
                 cfg.get('train_dataloader', {}).get('dataset', {}).get('metainfo'),
                 _test_dataset(cfg).get('metainfo'),
                 cfg.get('metainfo')):
        if meta and meta.get(key) is not None:
            value = float(meta[key])
            if not value > 0:
                raise ValueError(f'{cfg.filename}: the training {key} must be > 0, got '
                                 f'{meta[key]!r}')
            return value
    return None


def _test_dataset(cfg) -> dict:
    return cfg.get('test_dataloader', {}).get('dataset', {})


def input_format(cfg) -> InputFormat:
    """The channel order and resize of ``cfg``'s test pipeline (see :class:`InputFormat`).

    Raises:
        ValueError: the pipeline resizes to a fixed ``scale`` (meaningless for tiles) or
            by unequal factors.
    """
    fmt = InputFormat()
    pipeline = _test_dataset(cfg).get('pipeline')
    for step in pipeline if pipeline is not None else cfg.get('test_pipeline', []):
        kind = step.get('type')
        if kind == 'LoadImageFromFile':
            fmt.channel_order = step.get('channel_order', 'bgr')
        elif kind == 'Resize':
            factor = step.get('scale_factor')
            if step.get('scale') is not None or factor is None:
                raise ValueError(f'{cfg.filename}: the test pipeline resizes to a fixed '
                                 f'scale ({step}); slides need Resize(scale_factor=s) or '
                                 'no Resize (choose the --level whose pixel size fits)')
            if isinstance(factor, (tuple, list)):
                if len(set(factor)) != 1:
                    raise ValueError(f'{cfg.filename}: Resize scale_factor {factor}: only '
                                     'equal factors are supported for slides')
                factor = factor[0]
            fmt.scale_factor = float(factor)
    if fmt.channel_order not in ('bgr', 'rgb'):
        raise ValueError(f'{cfg.filename}: LoadImageFromFile channel_order must be bgr or '
                         f'rgb, got {fmt.channel_order!r}')
    return fmt


def slide_defaults(cfg) -> dict:
    """``tile_size``, ``nms_iou``, ``class_agnostic`` and ``flips`` of the config's
    ``TiledTestLoop`` (else the model's test NMS, no flips), the settings the model was
    evaluated with."""
    nms = cfg.model.get('test_cfg', {}).get('rcnn', {}).get('nms', {})
    loop = cfg.get('test_cfg') or {}
    return dict(
        tile_size=int(loop.get('tile_size', 512)),
        nms_iou=float(loop.get('nms_iou', nms.get('iou_threshold', 0.3))),
        class_agnostic=bool(loop.get('class_agnostic', nms.get('class_agnostic', False))),
        flips=tuple(loop.get('flips', ())))
