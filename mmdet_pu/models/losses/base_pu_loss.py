"""The non-negative PU risk and the base class of every PU classification loss
(docs/method.md#binary-pu-risk)."""
import numbers
from abc import ABCMeta, abstractmethod

import torch
import torch.nn as nn
from torch import Tensor

#: How E_x[H(c, bg)] is estimated: over U ∪ P (the paper's Eq. 6) or over U only (naive).
RISK_ESTIMATORS = ('union', 'unlabeled')
#: How the bracket is kept non-negative: the paper's max{0, .} (Eq. 7) or the nnPU step.
NONNEGATIVE_MODES = ('clamp', 'nnpu')
#: The risk per expected positive (divided by sum_m pi_m) or per sample, as it stands.
RISK_SCALES = ('per_positive', 'per_location')


def pu_risk_terms(h_label: Tensor,
                  h_bg: Tensor,
                  labels: Tensor,
                  weights: Tensor,
                  priors: Tensor,
                  estimator: str = 'union',
                  groups: Tensor = None,
                  num_groups: int = None) -> tuple:
    """The two terms of the PU risk of one mini-batch (paper Eq. 8; Eq. 15 for C classes).

    With priors pi_m, weights w, positives P_m, unlabeled U and weighted counts
    N_p^m = sum_{i in P_m} w_i, N_u = sum_{k in U} w_k:

        R_p = sum_m pi_m / N_p^m * sum_{i in P_m} w_i H(c_i, m)
        r   = E_x[H(c, bg)] - sum_m pi_m / N_p^m * sum_{i in P_m} w_i H(c_i, bg)

    E_x is the weighted mean over U ∪ P (``'union'``) or over U (``'unlabeled'``); r
    estimates the negatives' risk, the bracket that :func:`nonnegative_risk` keeps from
    going below 0. A class without weighted positives contributes no terms; empty sets
    give 0, never NaN.

    With ``groups`` (a group index per sample, e.g. the FPN level), r is returned split
    into its groups' shares, r = sum_g r_g with

        r_g = 1 / N_x * sum_{k in x, g} w_k H(c_k, bg)
              - sum_m pi_m / N_p^m * sum_{i in P_m, g} w_i H(c_i, bg),

    N_x the weighted count of the whole estimate's set (docs/method.md#level-wise-bracket).

    Args:
        h_label (Tensor): (N,) H(c_i, label_i); only read for positives.
        h_bg (Tensor): (N,) H(c_i, background).
        labels (Tensor): (N,) labels in [0, C]; C means unlabeled.
        weights (Tensor): (N,) non-negative sample weights; 0 ignores a sample.
        priors (Tensor): (C,) class priors pi_m.
        estimator (str): One of :data:`RISK_ESTIMATORS`.
        groups (Tensor, optional): (N,) group indices in [0, num_groups).
        num_groups (int, optional): The number of groups (with ``groups``).

    Returns:
        tuple[Tensor, Tensor]: R_p, a scalar, and r, a scalar or, with ``groups``, the
        ``(num_groups,)`` shares r_g.
    """
    num_classes = priors.numel()
    # Weighted count of each class, the background slot last: (C + 1,)
    counts = weights.new_zeros(num_classes + 1).index_add_(0, labels, weights)
    num_pos = counts[:num_classes]
    # pi_m / N_p^m; classes without positives are never indexed by a weighted sample.
    class_coef = priors / torch.where(num_pos > 0, num_pos, torch.ones_like(num_pos))
    sample_coef = torch.cat([class_coef, class_coef.new_zeros(1)])[labels] * weights

    positive_risk = (sample_coef * h_label).sum()

    if estimator == 'union':
        marginal_weights = weights
    else:
        marginal_weights = weights * (labels == num_classes)
    marginal_total = marginal_weights.sum()
    marginal_total = torch.where(marginal_total > 0, marginal_total,
                                 torch.ones_like(marginal_total))
    if groups is None:
        marginal_bg = (marginal_weights * h_bg).sum() / marginal_total
        return positive_risk, marginal_bg - (sample_coef * h_bg).sum()
    shares = (marginal_weights / marginal_total - sample_coef) * h_bg
    return positive_risk, shares.new_zeros(num_groups).index_add_(0, groups, shares)


def is_corrected(negative_risk: Tensor, nonnegative: str = 'clamp',
                 beta: float = 0.0) -> Tensor:
    """Whether :func:`nonnegative_risk` replaces the bracket r: r < 0 (``'clamp'``, the
    gradient of r is dropped) or r < -beta (``'nnpu'``, the ascent step). A bool scalar."""
    return negative_risk < (0.0 if nonnegative == 'clamp' else -beta)


def nonnegative_risk(positive_risk: Tensor, negative_risk: Tensor,
                     nonnegative: str = 'clamp', beta: float = 0.0,
                     gamma: float = 1.0) -> Tensor:
    """The non-negative PU risk from its terms R_p and r (:func:`pu_risk_terms`).

    ``'clamp'`` returns R_p + max{0, r} (Eq. 7), or R_p + sum_g max{0, r_g} for the
    shares r_g of a grouped r (docs/method.md#level-wise-bracket); ``'nnpu'`` returns
    R_p + r, or R_p - beta with the gradient of -gamma * r when r < -beta
    (docs/method.md#naive-pu-and-nnpu).

    Args:
        positive_risk (Tensor): R_p.
        negative_risk (Tensor): r, a scalar, or its ``(G,)`` group shares (clamp only).
        nonnegative (str): One of :data:`NONNEGATIVE_MODES`.
        beta (float): nnPU threshold, >= 0.
        gamma (float): nnPU ascent factor, in (0, 1].

    Returns:
        Tensor: Scalar risk.
    """
    if nonnegative == 'clamp':
        return positive_risk + negative_risk.clamp(min=0).sum()
    if negative_risk.dim():
        raise ValueError("nnPU takes one bracket r per risk, got group shares; "
                         "split the bracket by group with nonnegative='clamp' only")
    overfitting = is_corrected(negative_risk, nonnegative, beta)
    value = torch.where(overfitting, positive_risk - beta,
                        positive_risk + negative_risk)
    objective = torch.where(overfitting, -gamma * negative_risk, value)
    # Reports ``value`` and back-propagates the gradient of ``objective``.
    return value.detach() + (objective - objective.detach())


def check_labels(labels: Tensor, num_classes: int, loss: str) -> None:
    """Raise a ValueError naming ``loss`` unless every label is in ``[0, C]``: a class
    index, or ``C`` for unlabeled (background).

    Costs one reduction (``aminmax``) and one read of its two values; on a device that
    read waits for the labels. Without the check a label outside the range (an ignore
    value such as -1 or 255) fails inside the indexing with a bare out-of-bounds error,
    or a device-side assert on CUDA.
    """
    if labels.numel() == 0:
        return
    low, high = torch.stack(torch.aminmax(labels)).tolist()
    if low < 0 or high > num_classes:
        raise ValueError(
            f'{loss}: expected labels in [0, {num_classes}] (the class index, '
            f'{num_classes} for unlabeled), got labels from {low} to {high}; mark a '
            'sample to ignore with label weight 0, not with its label')


def check_prior(value, key: str) -> float:
    """``value`` as a float if it is a class prior, 0 < value < 1.

    Raises:
        ValueError: naming ``key`` otherwise.
    """
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not 0 < value < 1):
        raise ValueError(
            f'{key}: expected a class prior with 0 < prior < 1, got {value!r}')
    return float(value)


def check_priors(priors, key: str) -> list:
    """``priors`` as a list of floats if it holds one prior per class, sum < 1.

    Raises:
        ValueError: naming ``key`` (and the index of a bad value) otherwise.
    """
    if isinstance(priors, (str, bytes)) or not hasattr(priors, '__len__') \
            or len(priors) == 0:
        raise ValueError(f'{key}: expected a list with one prior per positive '
                         f'class, got {priors!r}')
    values = [check_prior(p, f'{key}[{i}]') for i, p in enumerate(priors)]
    if not sum(values) < 1:
        raise ValueError(f'{key}: expected sum(priors) < 1, got {values} '
                         f'(sum {sum(values):.4g})')
    return values


class BasePULoss(nn.Module, metaclass=ABCMeta):
    """Base of the PU classification losses: :func:`nonnegative_risk` of
    :func:`pu_risk_terms` over per-sample losses.

    Holds what every PU loss shares: the risk options and their checks, the prior
    buffer (``prior``, 0-dim, or ``priors``, ``(C,)``; saved in checkpoints and set in
    place by hooks), and ``forward`` with its checks of the reduction, the score shape,
    the labels and the weights. A subclass defines the per-sample losses H(c, label),
    H(c, bg) (:meth:`loss_terms`), the score channels it takes (:meth:`score_channels`)
    and, for targets other than a labels tensor, :meth:`split_target`.

    The risk is one estimate per mini-batch (docs/method.md#binary-pu-risk): call the
    loss once on every sample of the batch. It normalises itself, so ``avg_factor`` is
    ignored and the only reduction is ``'mean'``.

    Args:
        estimator (str): One of :data:`RISK_ESTIMATORS`.
        nonnegative (str): One of :data:`NONNEGATIVE_MODES`.
        nnpu_beta (float): nnPU threshold (``nonnegative='nnpu'`` only).
        nnpu_gamma (float): nnPU ascent factor (``nonnegative='nnpu'`` only).
        risk_scale (str): One of :data:`RISK_SCALES`; the two-stage losses pass
            ``'per_location'``.
        loss_weight (float): Weight of the loss.
    """

    #: The config keys of ``nnpu_beta`` and ``nnpu_gamma`` (named in errors and repr).
    nnpu_keys = ('beta', 'gamma')

    def __init__(self, estimator: str, nonnegative: str, nnpu_beta: float,
                 nnpu_gamma: float, risk_scale: str, loss_weight: float) -> None:
        super().__init__()
        self._check_risk_options(estimator, nonnegative, nnpu_beta, nnpu_gamma,
                                 risk_scale)
        self.estimator = estimator
        self.nonnegative = nonnegative
        self.nnpu_beta = float(nnpu_beta)
        self.nnpu_gamma = float(nnpu_gamma)
        self.risk_scale = risk_scale
        self.loss_weight = loss_weight
        self._corrections, self._estimates = None, 0

    def _check_risk_options(self, estimator: str, nonnegative: str, beta: float,
                            gamma: float, risk_scale: str) -> None:
        name = type(self).__name__
        beta_key, gamma_key = self.nnpu_keys
        if estimator not in RISK_ESTIMATORS:
            raise ValueError(f'loss_cls.estimator: expected one of {RISK_ESTIMATORS} '
                             f'for {name}, got {estimator!r}')
        if nonnegative not in NONNEGATIVE_MODES:
            raise ValueError(f'loss_cls.nonnegative: expected one of '
                             f'{NONNEGATIVE_MODES} for {name}, got {nonnegative!r}')
        if nonnegative == 'clamp' and (beta != 0 or gamma != 1):
            raise ValueError(f'loss_cls.{beta_key} / loss_cls.{gamma_key}: only used '
                             f"with nonnegative='nnpu' in {name}, got {beta_key}={beta}, "
                             f'{gamma_key}={gamma}')
        if not beta >= 0:
            raise ValueError(f'loss_cls.{beta_key}: expected {beta_key} >= 0, got {beta}')
        if not 0 < gamma <= 1:
            raise ValueError(f'loss_cls.{gamma_key}: expected 0 < {gamma_key} <= 1, '
                             f'got {gamma}')
        if risk_scale not in RISK_SCALES:
            raise ValueError(f'loss_cls.risk_scale: expected one of {RISK_SCALES} for '
                             f'{name}, got {risk_scale!r}')

    def _check_use_sigmoid(self, use_sigmoid, required: bool, kind: str) -> None:
        """Raise unless ``use_sigmoid`` is ``required`` for a loss of this ``kind``."""
        if use_sigmoid is not required:
            raise ValueError(f'loss_cls.use_sigmoid: {type(self).__name__} is a {kind}, '
                             f'got use_sigmoid={use_sigmoid!r}')

    def _register_prior(self, key: str, value) -> None:
        """Check ``value`` and hold it in the buffer ``key``, ``'prior'`` or ``'priors'``."""
        config_key = f'loss_cls.{key} ({type(self).__name__})'
        check = check_prior if key == 'prior' else check_priors
        self.register_buffer(key, torch.tensor(check(value, config_key)))

    @property
    def prior_key(self) -> str:
        """``'prior'`` or ``'priors'``: the buffer (and config key) holding pi."""
        return 'priors' if hasattr(self, 'priors') else 'prior'

    @property
    def class_priors(self) -> Tensor:
        """The ``(C,)`` class priors, from ``prior`` or ``priors``."""
        return self.priors if hasattr(self, 'priors') else self.prior.reshape(1)

    @abstractmethod
    def score_channels(self) -> tuple:
        """``(channels, description)``: the score channels the loss takes, and which."""

    @abstractmethod
    def loss_terms(self, cls_score: Tensor, labels: Tensor, quality) -> tuple:
        """Per-sample ``(H(c, label), H(c, bg))``, both ``(N,)``."""

    def split_target(self, target) -> tuple:
        """``(labels, quality)`` from the head's target: here a labels tensor."""
        if not isinstance(target, Tensor):
            raise ValueError(f'{type(self).__name__}: expected the target to be a '
                             f'labels tensor (N,), got {type(target).__name__}; heads '
                             f'with (labels, quality) targets take QualityFocalPULoss')
        return target, None

    def forward(self,
                cls_score: Tensor,
                target,
                weight: Tensor = None,
                avg_factor: float = None,
                reduction_override: str = None,
                groups: Tensor = None,
                num_groups: int = None) -> Tensor:
        """Compute the PU risk of a whole mini-batch.

        Args:
            cls_score (Tensor): ``(N, channels)`` logits (:meth:`score_channels`).
            target: ``(N,)`` labels in ``[0, C]``, ``C`` (background index) =
                unlabeled, or the subclass's target (:meth:`split_target`); another
                label is a ValueError (:func:`check_labels`).
            weight (Tensor, optional): ``(N,)`` label weights; 0 ignores a sample.
            avg_factor (float, optional): Ignored, the risk normalises itself.
            reduction_override (str, optional): ``None`` or ``'mean'``.
            groups (Tensor, optional): ``(N,)`` group indices in ``[0, num_groups)``:
                the bracket is kept non-negative per group
                (docs/method.md#level-wise-bracket; the dense PU heads pass the FPN
                level when the loss has ``per_level=True``).
            num_groups (int, optional): The number of groups (with ``groups``).

        Returns:
            Tensor: Scalar loss, float32 (float64 for float64 scores).
        """
        name = type(self).__name__
        if reduction_override not in (None, 'mean'):
            raise ValueError(
                f'{name} is a batch-level risk and only supports the '
                f"'mean' reduction, got reduction_override={reduction_override!r}")
        channels, description = self.score_channels()
        if cls_score.dim() != 2 or cls_score.size(1) != channels:
            raise ValueError(
                f'{name}: expected cls_score of shape (N, {channels}) ({description}), '
                f'got {tuple(cls_score.shape)}')
        # half precision is evaluated in float32, float64 stays float64
        cls_score = cls_score.to(torch.promote_types(cls_score.dtype, torch.float32))
        labels, quality = self.split_target(target)
        labels = labels.reshape(-1)
        if labels.numel() != cls_score.size(0):
            raise ValueError(f'{name}: expected {cls_score.size(0)} labels (one per '
                             f'row of cls_score), got {labels.numel()}')
        priors = self.class_priors.to(cls_score)
        check_labels(labels, priors.numel(), name)
        weight = (torch.ones_like(cls_score[:, 0]) if weight is None
                  else weight.reshape(-1).to(cls_score.dtype))
        if weight.numel() != cls_score.size(0):
            raise ValueError(f'{name}: expected {cls_score.size(0)} label weights (one '
                             f'per row of cls_score), got {weight.numel()}')
        h_label, h_bg = self.loss_terms(cls_score, labels, quality)
        if groups is not None:
            groups = groups.reshape(-1)
            if groups.numel() != cls_score.size(0):
                raise ValueError(f'{name}: expected {cls_score.size(0)} group indices '
                                 f'(one per row of cls_score), got {groups.numel()}')
        positive_risk, negative_risk = pu_risk_terms(h_label, h_bg, labels, weight,
                                                     priors, self.estimator, groups,
                                                     num_groups)
        self._count_correction(negative_risk)
        risk = nonnegative_risk(positive_risk, negative_risk, self.nonnegative,
                                self.nnpu_beta, self.nnpu_gamma)
        if self.risk_scale == 'per_positive':
            risk = risk / priors.sum()
        return self.loss_weight * risk

    def _count_correction(self, negative_risk: Tensor) -> None:
        """Count a risk estimate, and whether the non-negativity acted on it, without
        synchronising with the device (:meth:`pop_correction_share` reads the count)."""
        corrected = is_corrected(negative_risk.detach(), self.nonnegative,
                                 self.nnpu_beta).float().mean()  # a share per group
        self._corrections = (corrected if self._corrections is None
                             else self._corrections + corrected)
        self._estimates += 1

    def pop_correction_share(self):
        """The share of the risk estimates since the last call whose bracket r the
        non-negativity replaced (r < 0 for the clamp of Eq. 7, r < -beta for nnPU; an
        estimate split by group counts the share of its groups clamped), or None if the
        loss has not been called since; resets the count
        (:class:`~mmdet_pu.engine.hooks.PUCorrectionLoggerHook` logs it)."""
        if not self._estimates:
            return None
        share = float(self._corrections) / self._estimates
        self._corrections, self._estimates = None, 0
        return share

    def extra_repr(self) -> str:
        beta_key, gamma_key = self.nnpu_keys
        return (f'{self.prior_key}={getattr(self, self.prior_key).tolist()}, '
                f'estimator={self.estimator!r}, nonnegative={self.nonnegative!r}, '
                f'{beta_key}={self.nnpu_beta}, {gamma_key}={self.nnpu_gamma}, '
                f'risk_scale={self.risk_scale!r}, loss_weight={self.loss_weight}')
