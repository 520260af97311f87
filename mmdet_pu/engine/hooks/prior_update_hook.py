"""Per-batch class priors for multi-class PU learning (paper Section 2.3,
docs/method.md#prior-update)."""
import logging
import re
from contextlib import contextmanager
from typing import List, Optional, Sequence, Tuple, Union

import torch
from mmcv.cnn.bricks import DropPath
from mmengine.dist import all_reduce
from mmengine.hooks import Hook
from mmengine.logging import print_log
from mmengine.model import is_model_wrapper
from mmengine.structures import InstanceData
from torch import Tensor, nn
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.modules.dropout import _DropoutNd
from torch.nn.modules.instancenorm import _InstanceNorm

from mmdet.models.detectors import TwoStageDetector
from mmdet.registry import HOOKS
from mmdet_pu.models.losses.pu_loss import MultiPULoss, PULoss


def priors_from_counts(previous: Tensor, counts: Tensor, anchor: int,
                       anchor_prior: float) -> Tensor:
    """The paper's update rule (Section 2.3), before any clipping.

    ``pi_m = pi_1 * N_m / N_1`` for every class ``m``, so ``pi_anchor = pi_1``. When the
    anchor class has no detection (``N_1 = 0``) the ratio is undefined and the previous
    priors are returned unchanged.
    """
    if counts[anchor] == 0:
        return previous.clone()
    priors = anchor_prior * counts.to(previous) / counts[anchor].to(previous)
    priors[anchor] = anchor_prior
    return priors


def constrain_priors(priors: Tensor, anchor: int, min_prior: float,
                     max_total_prior: float) -> Tuple[Tensor, bool]:
    """Make ``priors`` valid for :class:`MultiPULoss`: ``0 < pi_m`` and ``sum pi < 1``.

    Every non-anchor prior is raised to at least ``min_prior``. If the total then exceeds
    ``max_total_prior``, the non-anchor priors' excess over ``min_prior`` is scaled down
    by one common factor so that the total equals ``max_total_prior``; the anchor prior
    (the fixed hyperparameter pi_1) and the ratios between the excesses are kept.
    Requires ``pi_anchor + (C - 1) * min_prior < max_total_prior``.

    Returns:
        tuple[Tensor, bool]: the constrained priors and whether they were scaled down.
    """
    priors = priors.clone()
    others = torch.ones_like(priors, dtype=torch.bool)
    others[anchor] = False
    priors[others] = priors[others].clamp(min=min_prior)
    scaled = bool(priors.sum() > max_total_prior)
    if scaled:
        excess = priors[others] - min_prior
        room = max_total_prior - priors[anchor] - min_prior * others.sum()
        priors[others] = min_prior + excess * (room / excess.sum())
    return priors, scaled


def _unwrap(model: nn.Module) -> nn.Module:
    return model.module if is_model_wrapper(model) else model


def _scalar_name(class_name: str) -> str:
    """A message-hub key suffix that is also a valid TensorBoard tag."""
    return re.sub(r'\W+', '_', str(class_name))


@contextmanager
def _eval_no_grad(*modules: nn.Module):
    """``torch.no_grad`` with ``modules`` in eval mode; restores every module's flag."""
    flags = {m: m.training for module in modules for m in module.modules()}
    for module in modules:
        module.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        for m, training in flags.items():
            m.training = training


def _behaves_as_in_eval(module: nn.Module) -> bool:
    """Whether ``module`` computes in its current mode what it computes in eval mode.

    False if it holds, in training mode, a normalisation layer with running statistics
    (BN uses batch statistics when training) or an active dropout / drop-path layer.
    """
    for m in module.modules():
        if not m.training:
            continue
        if isinstance(m, _BatchNorm) or (isinstance(m, _InstanceNorm)
                                         and m.track_running_stats):
            return False
        if (isinstance(m, _DropoutNd) and m.p > 0) or (isinstance(m, DropPath)
                                                       and m.drop_prob > 0):
            return False
    return True


@HOOKS.register_module()
class PriorUpdateHook(Hook):
    """Update the class priors of the multi-class PU loss from the current detector
    (paper Section 2.3; docs/method.md#the-prior-update-hook).

    Before every training step the detector, in inference mode, counts its detections
    on the batch per class with score >= ``score_thr``, N_m, and with pi_1 the prior of
    the anchor class the priors of every :class:`MultiPULoss` become::

        pi_m = pi_1 * N_m / N_1    (m != anchor),    pi_anchor = pi_1

    Every binary :class:`PULoss` (the RPN) receives sum_m pi_m (``update_rpn_prior``).
    The priors are logged as ``train/prior_<class>`` and ``train/prior_rpn``.

    Args:
        anchor_prior (float): pi_1, in (0, ``max_total_prior``).
        anchor_class (int | str, optional): Index or name of the anchor class.
            Defaults to the most annotated class of the training dataset.
        score_thr (float): Detections below it are not counted. Defaults to 0.5.
        interval (int): Update every ``interval`` iterations. Defaults to 1.
        begin_iter (int): First iteration updated. Defaults to 0.
        min_prior (float): Floor of the non-anchor priors. Defaults to 1e-3.
        max_total_prior (float): Bound of sum_m pi_m, below 1. Defaults to 0.99.
        reuse_features (bool): Detect from the training forward's features when that
            is equivalent. Defaults to True.
        update_rpn_prior (bool): Set the binary PU losses' prior. Defaults to True.
        smoothing (float): Weight of the past in running counts, in [0, 1).
            Defaults to 0 (the paper's per-batch counts).
    """

    priority = 'NORMAL'

    def __init__(self,
                 anchor_prior: float,
                 anchor_class: Optional[Union[int, str]] = None,
                 score_thr: float = 0.5,
                 interval: int = 1,
                 begin_iter: int = 0,
                 min_prior: float = 1e-3,
                 max_total_prior: float = 0.99,
                 reuse_features: bool = True,
                 update_rpn_prior: bool = True,
                 smoothing: float = 0.0) -> None:
        if not 0 < max_total_prior < 1:
            raise ValueError('PriorUpdateHook: max_total_prior must be in (0, 1), '
                             f'got {max_total_prior}')
        self.max_total_prior = max_total_prior
        if not 0 < anchor_prior < max_total_prior:
            raise ValueError('PriorUpdateHook: anchor_prior (pi_1) must be in '
                             f'(0, max_total_prior={max_total_prior}), got {anchor_prior}')
        self.anchor_prior = anchor_prior
        self.anchor_class = anchor_class
        if not 0 < min_prior < anchor_prior:
            raise ValueError('PriorUpdateHook: min_prior must be in '
                             f'(0, anchor_prior={anchor_prior}), got {min_prior}')
        self.min_prior = min_prior
        if not 0 <= smoothing < 1:
            raise ValueError(f'PriorUpdateHook: smoothing must be in [0, 1), got '
                             f'{smoothing}')
        self.smoothing = smoothing
        if interval < 1 or begin_iter < 0:
            raise ValueError('PriorUpdateHook: interval must be >= 1 and begin_iter '
                             f'>= 0, got interval={interval}, begin_iter={begin_iter}')
        self.interval = interval
        self.begin_iter = begin_iter
        # counting detections: at which score, and with the step's own features
        self.score_thr = score_thr
        self.reuse_features = reuse_features
        self.update_rpn_prior = update_rpn_prior
        self.running_counts: Optional[Tensor] = None
        self._warned_clip = False
        self._feature_hook = None
        self._pending_samples = None

    # ------------------------------------------------------------------ hook points
    def before_train(self, runner) -> None:
        """Find the losses and the anchor class, and set ``pi_anchor = pi_1``."""
        model = _unwrap(runner.model)
        self.multi_losses: List[MultiPULoss] = [
            m for m in model.modules() if isinstance(m, MultiPULoss)]
        self.binary_losses: List[PULoss] = [
            m for m in model.modules() if isinstance(m, PULoss)]
        if not self.multi_losses:
            raise RuntimeError(
                'PriorUpdateHook needs a MultiPULoss in the model (e.g. '
                'model.roi_head.bbox_head.loss_cls=dict(type="MultiPULoss", ...)), '
                'found none')

        dataset = runner.train_dataloader.dataset
        classes = dataset.metainfo.get('classes')
        num_classes = self.multi_losses[0].priors.numel()
        if classes is None or len(classes) != num_classes:
            raise ValueError(
                f'PriorUpdateHook: the MultiPULoss has {num_classes} priors but the '
                f'training dataset metainfo "classes" is {classes}')
        self.class_names = [_scalar_name(name) for name in classes]
        self.anchor = self._resolve_anchor(dataset, list(classes))
        if self.anchor_prior + (num_classes - 1) * self.min_prior >= self.max_total_prior:
            raise ValueError(
                f'PriorUpdateHook: anchor_prior + (C - 1) * min_prior = '
                f'{self.anchor_prior} + {num_classes - 1} * {self.min_prior} must be '
                f'below max_total_prior={self.max_total_prior}')

        priors = self.multi_losses[0].priors.detach().clone()
        priors[self.anchor] = self.anchor_prior
        self._set_priors(priors)

        self._model = model
        if self.reuse_features and isinstance(model, TwoStageDetector) \
                and model.with_rpn:
            features = model.neck if model.with_neck else model.backbone
            self._feature_hook = features.register_forward_hook(
                self._update_from_features)

    def before_train_iter(self, runner, batch_idx: int,
                          data_batch: Optional[dict] = None) -> None:
        """Update the priors from this batch's detections (now or in the forward)."""
        if runner.iter < self.begin_iter or \
                (runner.iter - self.begin_iter) % self.interval:
            return
        if self._can_reuse_features():
            # the training forward's features are the inference ones: detect there
            self._pending_samples = self._model.data_preprocessor(
                data_batch, False)['data_samples']
        else:
            self._update(self.count_detections(runner, data_batch))

    def after_train_iter(self, runner, batch_idx: int,
                         data_batch: Optional[dict] = None,
                         outputs: Optional[dict] = None) -> None:
        """Log the priors used in this iteration."""
        priors = self.multi_losses[0].priors.tolist()
        for name, value in zip(self.class_names, priors):
            runner.message_hub.update_scalar(f'train/prior_{name}', value)
        if self.binary_losses:
            runner.message_hub.update_scalar(
                'train/prior_rpn', self.binary_losses[0].prior.item())

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        """Save the running counts (``smoothing > 0``) with the priors."""
        if self.running_counts is not None:
            checkpoint['prior_update_running_counts'] = self.running_counts.cpu()

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        """Restore the running counts of a resumed run."""
        if 'prior_update_running_counts' in checkpoint:
            self.running_counts = checkpoint['prior_update_running_counts']

    def after_train(self, runner) -> None:
        if self._feature_hook is not None:
            self._feature_hook.remove()
            self._feature_hook = None

    # ------------------------------------------------------------------ helpers
    def count_detections(self, runner, data_batch: dict) -> Tensor:
        """``N_m`` of ``data_batch`` (the raw collated batch) by a separate forward.

        Runs the current detector in inference mode on the batch (the model's data
        preprocessor is applied here) and returns :meth:`count`.
        """
        model = _unwrap(runner.model)
        with _eval_no_grad(model), runner.optim_wrapper.optim_context(model):
            data = model.data_preprocessor(data_batch, False)
            # Counting needs no boxes in original image coordinates, and training
            # pipelines need not record the ``scale_factor`` rescaling would use.
            results = model.predict(data['inputs'], data['data_samples'],
                                    rescale=False)
        return self.count([result.pred_instances for result in results])

    def count(self, detections: Sequence[InstanceData]) -> Tensor:
        """``N_m``: post-NMS detections per class with score ``>= score_thr``.

        Args:
            detections (list[InstanceData]): Per image, ``scores`` and ``labels``.

        Returns:
            Tensor: int64, shape (C,), on the device of the loss buffers.
        """
        priors = self.multi_losses[0].priors
        counts = torch.zeros(priors.numel(), dtype=torch.int64, device=priors.device)
        for pred in detections:
            labels = pred.labels[pred.scores >= self.score_thr].to(priors.device)
            counts += torch.bincount(labels, minlength=priors.numel())
        return counts

    def _can_reuse_features(self) -> bool:
        model = self._model
        feature_modules = [model.backbone] + ([model.neck] if model.with_neck else [])
        return (self._feature_hook is not None
                and not getattr(model.data_preprocessor, 'batch_augments', None)
                and all(_behaves_as_in_eval(m) for m in feature_modules))

    def _update_from_features(self, module: nn.Module, inputs, features) -> None:
        """Forward hook of the neck: detect from the training forward's features."""
        if self._pending_samples is None:
            return
        samples, self._pending_samples = self._pending_samples, None
        model = self._model
        with _eval_no_grad(model.rpn_head, model.roi_head):
            proposals = model.rpn_head.predict(features, samples, rescale=False)
            results = model.roi_head.predict(features, proposals, samples,
                                             rescale=False)
        self._update(self.count(results))

    def _update(self, counts: Tensor) -> None:
        """Sum ``counts`` over ranks, smooth them and apply the update rule (Section 2.3)."""
        all_reduce(counts, op='sum')
        if self.smoothing:
            counts = counts.double()
            if self.running_counts is not None:
                counts = (self.smoothing * self.running_counts.to(counts)
                          + (1 - self.smoothing) * counts)
            self.running_counts = counts
        self._set_priors(priors_from_counts(
            self.multi_losses[0].priors, counts, self.anchor, self.anchor_prior))

    def _set_priors(self, priors: Tensor) -> None:
        """Constrain ``priors``, then copy them into every PU loss in place."""
        valid, scaled = constrain_priors(
            priors, self.anchor, self.min_prior, self.max_total_prior)
        if scaled and not self._warned_clip:
            print_log(
                f'PriorUpdateHook: the priors {priors.tolist()} sum to more than '
                f'max_total_prior={self.max_total_prior}; the non-anchor priors are '
                'scaled down (warned once)', logger='current', level=logging.WARNING)
            self._warned_clip = True
        for loss in self.multi_losses:
            loss.priors.copy_(valid)
        for loss in self.binary_losses if self.update_rpn_prior else ():
            loss.prior.copy_(valid.sum())

    def _resolve_anchor(self, dataset, classes: Sequence[str]) -> int:
        """Index of the anchor class: the configured one or the most annotated."""
        return resolve_anchor_class(self.anchor_class, classes, dataset,
                                    'PriorUpdateHook: anchor_class')


def resolve_anchor_class(anchor_class: Optional[Union[int, str]], classes: Sequence[str],
                         dataset, key: str) -> int:
    """Index of the anchor class of multi-class PU learning among ``classes``.

    ``anchor_class`` is a class name, an index in ``[0, C)`` or None: then the class
    with the most annotations in ``dataset`` (:func:`count_annotations`; the first on a
    tie, logged with the counts). ``dataset`` is only read for None.

    Raises:
        ValueError: naming ``key`` (the setting, e.g. ``'PriorUpdateHook:
            anchor_class'``), for a name that is not one of ``classes``, an index out of
            range or a value of another type.
    """
    classes = list(classes)
    if isinstance(anchor_class, str):
        if anchor_class not in classes:
            raise ValueError(f'{key} {anchor_class!r} is not one of the dataset classes '
                             f'{tuple(classes)}')
        return classes.index(anchor_class)
    if anchor_class is None:
        counts = count_annotations(dataset, len(classes))
        anchor = max(range(len(classes)), key=lambda c: counts[c])
        print_log(f'{key}: the most annotated class, "{classes[anchor]}" (annotations '
                  f'{dict(zip(classes, counts))})', logger='current')
        return anchor
    if isinstance(anchor_class, bool) or not isinstance(anchor_class, int) \
            or not 0 <= anchor_class < len(classes):
        raise ValueError(f'{key}: expected a class name or an index in '
                         f'0..{len(classes) - 1} ({len(classes)} classes '
                         f'{tuple(classes)}), got {anchor_class!r}')
    return anchor_class


def count_annotations(dataset, num_classes: int) -> List[int]:
    """Annotated (not ignored) instances per class over all samples of ``dataset``."""
    counts = [0] * num_classes
    for idx in range(len(dataset)):
        for instance in dataset.get_data_info(idx)['instances']:
            if not instance.get('ignore_flag', 0):
                counts[instance['bbox_label']] += 1
    return counts
