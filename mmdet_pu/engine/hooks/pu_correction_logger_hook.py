"""Logs how often each PU loss's non-negativity acts (docs/method.md#the-clamped-bracket)."""
from collections import deque
from typing import Dict, Optional

from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper

from mmdet.registry import HOOKS
from mmdet_pu.models.losses.base_pu_loss import BasePULoss


def pu_losses(model) -> Dict[str, BasePULoss]:
    """``{name: loss}`` of every PU loss in ``model``, named by its module path without
    ``.loss_cls`` (``rpn_head``, ``roi_head.bbox_head``, ``bbox_head``, ...)."""
    model = model.module if is_model_wrapper(model) else model
    return {name.replace('.loss_cls', ''): module
            for name, module in model.named_modules() if isinstance(module, BasePULoss)}


@HOOKS.register_module()
class PUCorrectionLoggerHook(Hook):
    """Logs, per PU loss, the share of its risk estimates whose bracket r the
    non-negativity replaced: r < 0 under the clamp max{0, r} of Eq. 7 (the negatives'
    gradient is dropped for that batch), r < -beta under nnPU (the ascent step).

    The scalar ``train/pu_corrected.<loss path>`` is written every iteration in which the
    loss was called: the mean, over the last ``window`` such iterations, of each
    iteration's share (1 or 0 for one estimate per iteration; several, as ``RPNHead``'s
    one per level, give a fraction). mmengine's logger prints a scalar that is not a
    loss as its current value, so the hook averages. A value near 1 means the negatives'
    risk rarely trains (docs/method.md#the-clamped-bracket). Models without a PU loss
    log nothing. In ``default_runtime.py``'s ``default_hooks``.

    Args:
        window (int): Iterations averaged; the logger's interval by default (10).
    """

    priority = 'NORMAL'  # before LoggerHook (BELOW_NORMAL) reads the message hub

    def __init__(self, window: int = 10) -> None:
        if not (isinstance(window, int) and window >= 1):
            raise ValueError(f'PUCorrectionLoggerHook.window: expected an integer >= 1, '
                             f'got {window!r}')
        self.window = window
        self._losses: Optional[Dict[str, BasePULoss]] = None
        self._shares: Dict[str, deque] = {}

    def before_train(self, runner) -> None:
        self._losses = pu_losses(runner.model)
        self._shares = {name: deque(maxlen=self.window) for name in self._losses}

    def after_train_iter(self, runner, batch_idx: int,
                         data_batch: Optional[dict] = None,
                         outputs: Optional[dict] = None) -> None:
        for name, loss in self._losses.items():
            share = loss.pop_correction_share()
            if share is not None:
                shares = self._shares[name]
                shares.append(share)
                runner.message_hub.update_scalar(f'train/pu_corrected.{name}',
                                                 sum(shares) / len(shares))
