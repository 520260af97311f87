"""The per-stage priors of a config estimated from one checkpoint (``tools/estimate_prior.py``).

The checkpoint is a detector trained with a provisional prior. Its config's split (the
training images by default: the samples the loss sees) is sampled as training does
(:mod:`.samples`), the estimators run over the samples (:mod:`.estimation`) and the
result becomes the estimate report (:mod:`.estimate_file`). A dense or cascade config
(:func:`~.keys.detector_kind`) gets the label-frequency estimate of every stage
(:mod:`.label_frequency`) instead.
"""
from typing import List, Optional

import torch

from mmdet.registry import DATASETS
from mmdet_pu.engine.hooks.prior_update_hook import resolve_anchor_class
from mmdet_pu.engine.launch import load_config
from .estimate_file import build_report
from .estimation import estimate_priors
from .keys import detector_kind, prior_hook_index, stage_prior_keys
from .label_frequency import estimate_stages, loss_prior
from .samples import draw_split, even_indices, load_detector_and_split, resolve_device


def trained_priors(model) -> dict:
    """The priors the checkpoint's losses hold (buffers saved with the weights):
    ``{'roi': ..., 'rpn': ...}``, a float, a list per class or None."""
    return dict(roi=loss_prior(model.roi_head.bbox_head.loss_cls),
                rpn=loss_prior(model.rpn_head.loss_cls))


def anchor_class(cfg, hook: Optional[int], classes: List[str]) -> int:
    """Index of the multi-class anchor class, as ``PriorUpdateHook`` resolves it
    (:func:`~mmdet_pu.engine.hooks.prior_update_hook.resolve_anchor_class`; the most
    annotated class of the training set in a config without the hook)."""
    chosen = cfg.custom_hooks[hook].get('anchor_class', None) if hook is not None else None
    dataset = DATASETS.build(cfg.train_dataloader.dataset) if chosen is None else None
    key = f'custom_hooks.{hook}.anchor_class' if hook is not None else 'anchor_class'
    return resolve_anchor_class(chosen, classes, dataset, key)


def estimate_from_checkpoint(config: str, checkpoint: str, split: str = 'train',
                             num_images: Optional[int] = None, score_thr: float = 0.5,
                             oracle: bool = False, seed: int = 0,
                             device: Optional[str] = None, cfg_options=None) -> dict:
    """The estimate report (:func:`~.estimate_file.build_report`) of ``config``'s priors.

    Args:
        config: the experiment config file.
        checkpoint: a detector of that config trained with a provisional prior.
        split: ``'train'`` or ``'val'``, the images to estimate on.
        num_images: that many images evenly spaced over the split (None: all).
        score_thr: detections with this score or more complete the labeled cells.
        oracle: also estimate with the complete annotations (a ``CellCocoDataset``
            whose deletion is switched off).
        seed: the seed of the samplers (``torch`` RNG).
        device: ``'cuda'`` or ``'cpu'``; None: cuda when available.
        cfg_options: settings merged into the config (``--cfg-options`` as a dict).

    Returns:
        dict: the report, with the run's ``config``, ``checkpoint``, ``split``,
        ``images``, ``score_thr`` and ``seed``; for a dense or cascade config
        :func:`~.label_frequency.estimate_stages`'s.
    """
    cfg = load_config(config, cfg_options)
    device = resolve_device(device)
    if detector_kind(cfg) != 'two_stage':
        return estimate_stages(cfg, config, checkpoint, split, num_images, score_thr,
                               oracle, seed, device)
    keys = stage_prior_keys(cfg, config)
    model, dataset, complete = load_detector_and_split(cfg, config, checkpoint, split,
                                                       oracle, device)
    classes = list(dataset.metainfo['classes'])
    num_classes = model.roi_head.bbox_head.num_classes
    if len(classes) != num_classes:
        raise ValueError(f'{config}: the dataset has {len(classes)} classes '
                         f'{tuple(classes)}, the model {num_classes}')
    hook = prior_hook_index(cfg)
    anchor = anchor_class(cfg, hook, classes) if num_classes > 1 else 0

    torch.manual_seed(seed)
    indices = even_indices(len(dataset), num_images)
    images = draw_split(model, dataset, indices, score_thr, complete, device)
    estimates = estimate_priors(
        images, num_classes,
        estimator=getattr(model.roi_head.bbox_head.loss_cls, 'estimator', 'union'))
    return dict(config=config, checkpoint=checkpoint, split=split, images=len(indices),
                score_thr=score_thr, seed=seed,
                **build_report(estimates, keys, classes, anchor, trained_priors(model),
                               held_out=split == 'val',
                               only_hook=hook is not None and len(cfg.custom_hooks) == 1))
