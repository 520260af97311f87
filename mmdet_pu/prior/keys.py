"""The config keys that hold the class prior pi.

After composition (docs/method.md#priors-per-stage) pi lives in the losses and the prior hook:
``model.rpn_head.loss_cls.prior`` and ``model.roi_head.bbox_head.loss_cls.prior``
(binary ``PULoss``), ``model.roi_head.bbox_head.loss_cls.priors`` (multi-class
``MultiPULoss``: initial values with a prior hook, the priors themselves without one) and
``custom_hooks.<i>.anchor_prior`` (pi_1 of the ``PriorUpdateHook``, which sets the other
class priors and, unless its ``update_rpn_prior=False``, the RPN prior).
"""
from typing import List, NamedTuple, Optional

RPN_PRIOR_KEY = 'model.rpn_head.loss_cls.prior'
ROI_PRIOR_KEY = 'model.roi_head.bbox_head.loss_cls.prior'
ROI_PRIORS_KEY = 'model.roi_head.bbox_head.loss_cls.priors'


def type_name(node):
    """The registry name of a config dict's type (without a scope prefix), or None."""
    value = node.get('type') if isinstance(node, dict) else None
    return value.split('.')[-1] if isinstance(value, str) else None


def _roi_loss(cfg):
    return cfg.get('model', {}).get('roi_head', {}).get('bbox_head', {}).get('loss_cls')


def get_key(cfg, key):
    """The value at a dotted key (list items by index), or KeyError naming the key."""
    node = cfg
    for part in key.split('.'):
        try:
            node = node[int(part)] if isinstance(node, (list, tuple)) else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise KeyError(f'config key {key!r} does not exist (no {part!r})') from None
    return node


def prior_hook_index(cfg) -> Optional[int]:
    """Index of the ``PriorUpdateHook`` in ``custom_hooks``, None without one."""
    for i, hook in enumerate(cfg.get('custom_hooks', None) or []):
        if type_name(hook) == 'PriorUpdateHook':
            return i
    return None


def find_prior_keys(cfg) -> List[str]:
    """The keys a prior sweep sets to one value.

    The hook's ``anchor_prior`` if the config has a ``PriorUpdateHook``, otherwise the
    RoI head's ``PULoss`` prior together with every other ``PULoss`` prior in ``model``
    that holds the same value: a per-stage RPN prior (one that differs) is kept.

    Raises:
        ValueError: for fixed multi-class priors (a ``MultiPULoss`` without a
            ``PriorUpdateHook``): one value cannot set a prior per class.
    """
    hook = prior_hook_index(cfg)
    if hook is not None:
        return [f'custom_hooks.{hook}.anchor_prior']
    if type_name(_roi_loss(cfg)) == 'MultiPULoss':
        raise ValueError(
            f'{ROI_PRIORS_KEY} holds fixed per-class priors (a MultiPULoss without a '
            'PriorUpdateHook): a sweep sets one value, so sweep a config with the hook '
            '(custom_hooks.<i>.anchor_prior) or estimate the priors with '
            'tools/estimate_prior.py')

    keys = []

    def walk(node, path):
        if isinstance(node, dict):
            if type_name(node) == 'PULoss' and 'prior' in node:
                keys.append(f'{path}.prior')
            for name, child in node.items():
                walk(child, f'{path}.{name}')
        elif isinstance(node, (list, tuple)):
            for i, child in enumerate(node):
                walk(child, f'{path}.{i}')

    walk(cfg.get('model', {}), 'model')
    roi_keys = [key for key in keys if key.startswith('model.roi_head.')]
    if not roi_keys:
        return keys
    tied = get_key(cfg, roi_keys[0])
    return [key for key in keys if key in roi_keys or get_key(cfg, key) == tied]


class StageKeys(NamedTuple):
    """Where each stage's prior is set.

    Attributes:
        roi: key of the RoI stage's prior (binary ``PULoss`` prior; with several
            classes the hook's ``anchor_prior``, or the ``MultiPULoss`` priors
            themselves in a config without the hook).
        rpn: key of the RPN's ``PULoss`` prior, None if the RPN has none.
        rpn_by_hook: the ``PriorUpdateHook`` overwrites ``rpn`` with the sum of the class
            priors (its ``update_rpn_prior``, True by default).
    """
    roi: str
    rpn: Optional[str]
    rpn_by_hook: bool


def stage_prior_keys(cfg, config_file: str = 'config') -> StageKeys:
    """The per-stage prior keys of ``cfg``; ValueError naming the file if it has none."""
    hook = prior_hook_index(cfg)
    loss = _roi_loss(cfg)
    if hook is not None:
        roi = f'custom_hooks.{hook}.anchor_prior'
    elif type_name(loss) == 'MultiPULoss' and 'priors' in loss:
        roi = ROI_PRIORS_KEY
    else:
        if type_name(loss) != 'PULoss' or 'prior' not in loss:
            raise ValueError(
                f'{config_file}: model.roi_head.bbox_head.loss_cls is '
                f'{type_name(loss)!r}; expected a PULoss with a prior, a MultiPULoss '
                'with priors, or a PriorUpdateHook in custom_hooks (multi-class PU)')
        roi = ROI_PRIOR_KEY
    rpn_loss = cfg.get('model', {}).get('rpn_head', {}).get('loss_cls')
    rpn = RPN_PRIOR_KEY if type_name(rpn_loss) == 'PULoss' and 'prior' in rpn_loss \
        else None
    by_hook = hook is not None and rpn is not None and bool(
        cfg.custom_hooks[hook].get('update_rpn_prior', True))
    return StageKeys(roi, rpn, by_hook)
