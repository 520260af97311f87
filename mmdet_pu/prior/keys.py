"""The config keys that hold the class prior pi.

After composition (docs/method.md#priors-per-stage) pi lives in the losses and the prior hook:
``model.rpn_head.loss_cls.prior`` and ``model.roi_head.bbox_head.loss_cls.prior``
(binary ``PULoss``), ``model.roi_head.bbox_head.loss_cls.priors`` (multi-class
``MultiPULoss``: initial values with a prior hook, the priors themselves without one) and
``custom_hooks.<i>.anchor_prior`` (pi_1 of the ``PriorUpdateHook``, which sets the other
class priors and, unless its ``update_rpn_prior=False``, the RPN prior). Dense detectors
hold it at ``model.bbox_head.loss_cls.prior`` (``.priors``; ``FocalPULoss``,
``QualityFocalPULoss``), Cascade R-CNN at ``model.roi_head.bbox_head.<i>.loss_cls.prior``
(``.priors``) per stage besides the RPN's (docs/method.md#dense-detectors).
"""
from typing import Iterator, List, NamedTuple, Optional, Sequence, Tuple

RPN_PRIOR_KEY = 'model.rpn_head.loss_cls.prior'
ROI_PRIOR_KEY = 'model.roi_head.bbox_head.loss_cls.prior'
ROI_PRIORS_KEY = 'model.roi_head.bbox_head.loss_cls.priors'
#: The losses that hold a prior (``prior``, or ``priors`` one per class).
PU_LOSSES = ('PULoss', 'MultiPULoss', 'FocalPULoss', 'QualityFocalPULoss')
#: Where the detector's classifiers are: the RoI head (every cascade stage) or a dense head.
CLASSIFIER_PREFIXES = ('model.roi_head.', 'model.bbox_head.')


def type_name(node):
    """The registry name of a config dict's type (without a scope prefix), or None."""
    value = node.get('type') if isinstance(node, dict) else None
    return value.split('.')[-1] if isinstance(value, str) else None


def _roi_loss(cfg):
    head = cfg.get('model', {}).get('roi_head', {}).get('bbox_head', {})
    return head.get('loss_cls') if isinstance(head, dict) else None


def detector_kind(cfg) -> str:
    """``'two_stage'`` (an RPN and one RoI head: Faster R-CNN), ``'cascade'`` (a list of
    RoI stages: Cascade R-CNN) or ``'dense'`` (no RoI head: a one-stage detector)."""
    model = cfg.get('model', {})
    if 'roi_head' not in model:
        return 'dense'
    return 'cascade' if isinstance(model['roi_head'].get('bbox_head'), (list, tuple)) \
        else 'two_stage'


def loss_prior_key(cfg, loss_key: str) -> Optional[str]:
    """``<loss_key>.prior`` or ``<loss_key>.priors``, where the PU loss configured at
    ``loss_key`` (e.g. ``model.bbox_head.loss_cls``) holds its prior(s); None when that
    is not a PU loss with a prior."""
    try:
        loss = get_key(cfg, loss_key)
    except KeyError:
        return None
    if type_name(loss) not in PU_LOSSES:
        return None
    for name in ('priors', 'prior'):
        if name in loss:
            return f'{loss_key}.{name}'
    return None


def stage_name(loss_key: str) -> str:
    """The report's name of the stage whose loss is configured at ``loss_key``: ``'rpn'``,
    ``'roi'`` (Faster R-CNN's RoI head), ``'roi<i>'`` (cascade stage i), ``'head'`` (a
    dense head), else the key without ``model.`` and ``.loss_cls``."""
    path = loss_key.removeprefix('model.').removesuffix('.loss_cls')
    if path in ('rpn_head', 'bbox_head'):
        return 'rpn' if path == 'rpn_head' else 'head'
    if path.startswith('roi_head.bbox_head'):
        return 'roi' + path.removeprefix('roi_head.bbox_head').lstrip('.')
    return path


def get_key(cfg, key):
    """The value at a dotted key (list items by index), or KeyError naming the key."""
    node = cfg
    for part in key.split('.'):
        try:
            node = node[int(part)] if isinstance(node, (list, tuple)) else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise KeyError(f'config key {key!r} does not exist (no {part!r})') from None
    return node


def typed_nodes(node, path: str, types: Sequence[str]) -> Iterator[Tuple[str, dict]]:
    """``(dotted key, config dict)`` of every dict at or below ``node`` (whose key is
    ``path``) whose type is one of ``types``, walked through dicts and lists (e.g.
    Cascade R-CNN's stages), in config order."""
    if isinstance(node, dict):
        if type_name(node) in types:
            yield path, node
        for name, child in node.items():
            yield from typed_nodes(child, f'{path}.{name}', types)
    elif isinstance(node, (list, tuple)):
        for i, child in enumerate(node):
            yield from typed_nodes(child, f'{path}.{i}', types)


def prior_hook_index(cfg) -> Optional[int]:
    """Index of the ``PriorUpdateHook`` in ``custom_hooks``, None without one."""
    for i, hook in enumerate(cfg.get('custom_hooks', None) or []):
        if type_name(hook) == 'PriorUpdateHook':
            return i
    return None


def find_prior_keys(cfg) -> List[str]:
    """The keys a prior sweep sets to one value.

    The hook's ``anchor_prior`` if the config has a ``PriorUpdateHook``, otherwise the
    classifier's PU-loss prior (the RoI head's, every stage of a cascade, or the dense
    head's) together with every other PU-loss prior in ``model`` that holds the same
    value as the first of them: a per-stage RPN prior (one that differs) is kept.

    Raises:
        ValueError: for fixed multi-class priors (a ``MultiPULoss``, or a dense loss
            with ``priors``, without a ``PriorUpdateHook``): one value cannot set a prior
            per class.
    """
    hook = prior_hook_index(cfg)
    if hook is not None:
        return [f'custom_hooks.{hook}.anchor_prior']

    keys, fixed = [], []
    for path, loss in typed_nodes(cfg.get('model', {}), 'model', PU_LOSSES):
        if type_name(loss) == 'MultiPULoss' or 'priors' in loss:
            fixed.append((f'{path}.priors', type_name(loss)))
        elif 'prior' in loss:
            keys.append(f'{path}.prior')
    for key, loss in fixed:
        if key.startswith(CLASSIFIER_PREFIXES):
            raise ValueError(
                f'{key} holds fixed per-class priors (a {loss} without a '
                'PriorUpdateHook): a sweep sets one value, so sweep a config with the hook '
                '(custom_hooks.<i>.anchor_prior) or estimate the priors with '
                'tools/estimate_prior.py (tools/fit_prior.py)')
    classifier_keys = [key for key in keys if key.startswith(CLASSIFIER_PREFIXES)]
    if not classifier_keys:
        return keys
    tied = get_key(cfg, classifier_keys[0])
    return [key for key in keys if key in classifier_keys or get_key(cfg, key) == tied]


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
