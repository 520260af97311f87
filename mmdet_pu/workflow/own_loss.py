"""A PU config's detector with its own classification losses: the self-training round
of ``tools/fit_prior.py --self-train-loss own`` (docs/method.md#self-training).

Each PU loss becomes the loss it generalises (docs/method.md#where-it-reduces-to-the-
detectors-loss): ``PULoss`` and ``MultiPULoss`` cross entropy (sigmoid or softmax as
the PU loss), ``FocalPULoss`` mmdet's ``FocalLoss``, ``QualityFocalPULoss``
``QualityFocalLoss``, with the same weight and focusing parameters. The heads stay (each
PU head computes its detector's own loss with them), and so do box-fit negatives. A
``PriorUpdateHook`` is dropped: it needs the PU loss's priors.
"""
from typing import List, Sequence

from mmengine.config import Config

from cellio.atomic import write_atomic
from mmdet_pu.prior.keys import type_name


def _cross_entropy(loss: dict) -> dict:
    return dict(type='CrossEntropyLoss', use_sigmoid=loss.get('use_sigmoid', False),
                loss_weight=loss.get('loss_weight', 1.0))


def _focal(loss: dict) -> dict:
    return dict(type='FocalLoss', use_sigmoid=True, gamma=loss.get('gamma', 2.0),
                alpha=loss.get('alpha', 0.25), loss_weight=loss.get('loss_weight', 1.0))


def _quality_focal(loss: dict) -> dict:
    return dict(type='QualityFocalLoss', use_sigmoid=True, beta=loss.get('beta', 2.0),
                loss_weight=loss.get('loss_weight', 1.0))


#: PU loss type -> the config of the detector's own loss it generalises.
OWN_LOSSES = dict(PULoss=_cross_entropy, MultiPULoss=_cross_entropy,
                  FocalPULoss=_focal, QualityFocalPULoss=_quality_focal)


def replace_pu_losses(node, path: str, replaced: List[str]):
    """``node`` with every PU loss config below it replaced by its own loss; the dotted
    paths of the replaced losses are appended to ``replaced``."""
    if isinstance(node, dict):
        own = OWN_LOSSES.get(type_name(node))
        if own is not None:
            replaced.append(path)
            return own(node)
        return {key: replace_pu_losses(value, f'{path}.{key}', replaced)
                for key, value in node.items()}
    if isinstance(node, (list, tuple)):
        return type(node)(replace_pu_losses(value, f'{path}.{i}', replaced)
                          for i, value in enumerate(node))
    return node


def write_own_loss_config(config: str, out: str) -> List[str]:
    """Write ``config`` with its PU losses replaced (module docstring) to ``out`` (a
    ``.py`` config file, written atomically: a resumed fit never reads half of one).

    Returns:
        list[str]: the config keys of the replaced losses (``model.rpn_head.loss_cls``,
        ...), which no ``--cfg-options`` of the new config may set below.

    Raises:
        ValueError: ``config`` holds no PU loss.
    """
    cfg = Config.fromfile(config)
    replaced: List[str] = []
    model = replace_pu_losses(cfg.model.to_dict(), 'model', replaced)
    if not replaced:
        raise ValueError(f'{config}: no PU loss ({", ".join(OWN_LOSSES)}) to replace by '
                         'the detector\'s own loss')
    cfg.model = model
    cfg.custom_hooks = [hook for hook in cfg.get('custom_hooks', [])
                        if type_name(hook) != 'PriorUpdateHook']
    write_atomic(out, cfg.pretty_text)
    return replaced


def own_loss_options(options: Sequence[str], replaced: Sequence[str]) -> List[str]:
    """The ``--cfg-options`` that set nothing inside a replaced loss (its prior, its risk
    options): those the own-loss config takes."""
    def inside(option: str) -> bool:
        key = option.split('=', 1)[0]
        return any(key.startswith(f'{path}.') for path in replaced)
    return [option for option in options if not inside(option)]
