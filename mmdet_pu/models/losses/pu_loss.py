"""Positive-unlabeled (PU) classification losses for detection heads.

Implements the classification losses of the paper, Section 2.2:

* :class:`PULoss`, binary detection, the paper's L_cls^pu (Section 2.2.1);
* :class:`MultiPULoss`, multi-class detection, the paper's L_cls^mpu (Section 2.2.2).

Both evaluate one risk function, :func:`pu_risk`, over the per-sample cross entropies
returned by :func:`cross_entropy_terms`.

Sample sets follow MMDetection's target encoding (docs/method.md#sample-sets). With ``C``
positive classes,
a sample with ``label == m`` (0 <= m < C) is a labeled positive of class m, one with
``label == C`` (the background index) is unlabeled, and one with ``label_weight == 0`` is
ignored. ``H`` is the cross entropy of the head: sigmoid BCE on one logit channel, or
softmax CE over ``C + 1`` channels (background last).
"""
import numbers

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from mmdet.registry import MODELS

#: How E_x[H(c, bg)] is estimated: over all sampled items (U ∪ P, the paper's proposal,
#: Eq. approx_unlabeled) or over the unlabeled items only (the naive approximation).
ESTIMATORS = ('union', 'unlabeled')
#: How the estimate of (1 - sum_m pi_m) E_{x|z=0}[H(c, 0)] is kept non-negative: the
#: paper's max{0, .} or Kiryo et al.'s (2017) nnPU step.
NONNEGATIVE_MODES = ('clamp', 'nnpu')


def cross_entropy_terms(cls_score: Tensor, labels: Tensor,
                        use_sigmoid: bool) -> tuple:
    """Per-sample cross entropies H(c, label) and H(c, background).

    Computed from log-sigmoid / log-softmax (``softplus`` and ``log_softmax``), so they
    stay finite for arbitrarily large logits.

    Args:
        cls_score (Tensor): ``(N, 1)`` logits of the positive class when ``use_sigmoid``,
            otherwise ``(N, C + 1)`` logits with the background in the last channel.
        labels (Tensor): ``(N,)`` labels in ``[0, C]``.
        use_sigmoid (bool): Sigmoid BCE (binary, ``C = 1``) or softmax CE.

    Returns:
        tuple[Tensor, Tensor]: ``h_label`` (N,), H(c, label) (only meaningful for
        positives; for sigmoid BCE it is H(c, positive) for every sample) and ``h_bg``
        (N,), H(c, background).
    """
    if use_sigmoid:
        logit = cls_score.reshape(-1)
        # -log sigmoid(x) = softplus(-x);  -log(1 - sigmoid(x)) = softplus(x)
        return F.softplus(-logit), F.softplus(logit)
    log_prob = F.log_softmax(cls_score, dim=1)
    h_label = -log_prob.gather(1, labels.reshape(-1, 1)).reshape(-1)
    return h_label, -log_prob[:, -1]


def pu_risk(h_label: Tensor,
            h_bg: Tensor,
            labels: Tensor,
            weights: Tensor,
            priors: Tensor,
            estimator: str = 'union',
            nonnegative: str = 'clamp',
            beta: float = 0.0,
            gamma: float = 1.0) -> Tensor:
    """Non-negative PU risk of one mini-batch (paper Eqs. of L_cls^pu and L_cls^mpu).

    With C positive classes, priors pi_m, weights w, positives P_m of class m, unlabeled U
    and weighted counts N_p^m = sum_{i in P_m} w_i, N_u = sum_{k in U} w_k:

        R_p = sum_m pi_m / N_p^m * sum_{i in P_m} w_i H(c_i, m)
        r   = E_x[H(c, bg)] - sum_m pi_m / N_p^m * sum_{i in P_m} w_i H(c_i, bg)
        E_x[H(c, bg)] = 1 / (N_u + sum_m N_p^m) * sum_{k in U ∪ P} w_k H(c_k, bg)  (union)
                      = 1 / N_u * sum_{k in U} w_k H(c_k, bg)                  (unlabeled)

    ``nonnegative='clamp'`` returns R_p + max{0, r} (the paper's loss). ``'nnpu'``
    (Kiryo et al. 2017) returns R_p + r when r >= -beta; otherwise its value is
    R_p - beta while its gradient is that of -gamma * r, i.e. a gradient ascent step on
    the negative risk (docs/method.md#naive-pu-and-nnpu).

    A class without (weighted) positives in the batch contributes no terms; with no
    positives at all, R_p = 0 and E_x[H(c, bg)] is the weighted mean over U. Empty sets
    give zero terms, never NaN.

    Args:
        h_label (Tensor): (N,) H(c_i, label_i); only read for positives.
        h_bg (Tensor): (N,) H(c_i, background).
        labels (Tensor): (N,) labels in [0, C]; C means unlabeled.
        weights (Tensor): (N,) non-negative sample weights; 0 ignores a sample.
        priors (Tensor): (C,) class priors pi_m.
        estimator (str): ``'union'`` or ``'unlabeled'`` (see :data:`ESTIMATORS`).
        nonnegative (str): ``'clamp'`` or ``'nnpu'``.
        beta (float): nnPU threshold, >= 0.
        gamma (float): nnPU ascent factor, in (0, 1].

    Returns:
        Tensor: Scalar risk.
    """
    num_classes = priors.numel()
    # Weighted count of each class, the background slot last: (C + 1,)
    counts = weights.new_zeros(num_classes + 1).index_add_(0, labels, weights)
    num_pos = counts[:num_classes]
    # pi_m / N_p^m; classes without positives are never indexed by a weighted sample.
    class_coef = priors / torch.where(num_pos > 0, num_pos, torch.ones_like(num_pos))
    sample_coef = torch.cat([class_coef, class_coef.new_zeros(1)])[labels] * weights

    positive_risk = (sample_coef * h_label).sum()
    positive_bg = (sample_coef * h_bg).sum()

    if estimator == 'union':
        marginal_weights = weights
    else:
        marginal_weights = weights * (labels == num_classes)
    marginal_total = marginal_weights.sum()
    marginal_bg = (marginal_weights * h_bg).sum() / torch.where(
        marginal_total > 0, marginal_total, torch.ones_like(marginal_total))

    negative_risk = marginal_bg - positive_bg
    if nonnegative == 'clamp':
        return positive_risk + negative_risk.clamp(min=0)
    overfitting = negative_risk < -beta
    value = torch.where(overfitting, positive_risk - beta,
                        positive_risk + negative_risk)
    objective = torch.where(overfitting, -gamma * negative_risk, value)
    # Reports ``value`` and back-propagates the gradient of ``objective``.
    return value.detach() + (objective - objective.detach())


def check_risk_options(owner: str, estimator: str, nonnegative: str, beta: float,
                       gamma: float, beta_key: str = 'beta',
                       gamma_key: str = 'gamma') -> None:
    """Validate the options of :func:`pu_risk` given to the loss ``owner``.

    ``beta_key`` / ``gamma_key`` are the loss's names of the nnPU threshold and ascent
    factor (a focal loss keeps ``gamma`` for its modulation).

    Raises:
        ValueError: naming the ``loss_cls`` key and the values expected.
    """
    if estimator not in ESTIMATORS:
        raise ValueError(f'loss_cls.estimator: expected one of {ESTIMATORS} for '
                         f'{owner}, got {estimator!r}')
    if nonnegative not in NONNEGATIVE_MODES:
        raise ValueError(f'loss_cls.nonnegative: expected one of '
                         f'{NONNEGATIVE_MODES} for {owner}, got {nonnegative!r}')
    if nonnegative == 'clamp' and (beta != 0 or gamma != 1):
        raise ValueError(f'loss_cls.{beta_key} / loss_cls.{gamma_key}: only used with '
                         f"nonnegative='nnpu' in {owner}, got {beta_key}={beta}, "
                         f'{gamma_key}={gamma}')
    if not beta >= 0:
        raise ValueError(f'loss_cls.{beta_key}: expected {beta_key} >= 0, got {beta}')
    if not 0 < gamma <= 1:
        raise ValueError(f'loss_cls.{gamma_key}: expected 0 < {gamma_key} <= 1, '
                         f'got {gamma}')


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


class BasePULoss(nn.Module):
    """Shared forward of :class:`PULoss` and :class:`MultiPULoss`.

    Subclasses provide ``use_sigmoid``, ``class_priors`` (a ``(C,)`` tensor) and
    ``_check_channels``.

    The risk is a batch-level estimate (docs/method.md#binary-pu-risk): call the loss once
    on every sampled item of the mini-batch (all images; for the RPN all FPN levels, see
    ``PURPNHead``).
    The loss normalises itself, so ``avg_factor`` is accepted for interface compatibility
    and does not change the result; the only reduction is ``'mean'``. Half-precision
    scores are evaluated in float32 and the loss is float32 (float64 for float64 scores).
    """

    def __init__(self, estimator: str = 'union', nonnegative: str = 'clamp',
                 beta: float = 0.0, gamma: float = 1.0,
                 loss_weight: float = 1.0) -> None:
        super().__init__()
        check_risk_options(type(self).__name__, estimator, nonnegative, beta, gamma)
        self.estimator = estimator
        self.nonnegative = nonnegative
        self.beta = float(beta)
        self.gamma = float(gamma)
        self.loss_weight = loss_weight

    def forward(self,
                cls_score: Tensor,
                label: Tensor,
                weight: Tensor = None,
                avg_factor: float = None,
                reduction_override: str = None) -> Tensor:
        """Compute the PU classification loss of a whole mini-batch.

        Args:
            cls_score (Tensor): ``(N, channels)`` logits.
            label (Tensor): ``(N,)`` labels, ``C`` (background index) = unlabeled.
            weight (Tensor, optional): ``(N,)`` label weights; 0 ignores a sample.
            avg_factor (float, optional): Ignored, the risk normalises itself.
            reduction_override (str, optional): ``None`` or ``'mean'``.

        Returns:
            Tensor: Scalar loss, float32 (float64 for float64 scores).
        """
        if reduction_override not in (None, 'mean'):
            raise ValueError(
                f'{type(self).__name__} is a batch-level risk and only supports the '
                f"'mean' reduction, got reduction_override={reduction_override!r}")
        self._check_channels(cls_score)
        # half precision is evaluated in float32, float64 stays float64
        cls_score = cls_score.to(torch.promote_types(cls_score.dtype, torch.float32))
        label = label.reshape(-1)
        weight = (torch.ones_like(cls_score[:, 0]) if weight is None
                  else weight.reshape(-1).to(cls_score.dtype))
        h_label, h_bg = cross_entropy_terms(cls_score, label, self.use_sigmoid)
        risk = pu_risk(h_label, h_bg, label, weight,
                       self.class_priors.to(cls_score),
                       estimator=self.estimator, nonnegative=self.nonnegative,
                       beta=self.beta, gamma=self.gamma)
        return self.loss_weight * risk

    def _check_channel_count(self, cls_score: Tensor, expected: int,
                             hint: str) -> None:
        if cls_score.dim() != 2 or cls_score.size(1) != expected:
            raise ValueError(
                f'{type(self).__name__}: expected cls_score of shape (N, {expected}) '
                f'({hint}), got {tuple(cls_score.shape)}')

    def extra_repr(self) -> str:
        return (f'estimator={self.estimator!r}, nonnegative={self.nonnegative!r}, '
                f'beta={self.beta}, gamma={self.gamma}, loss_weight={self.loss_weight}')


@MODELS.register_module()
class PULoss(BasePULoss):
    r"""Binary PU classification loss, the paper's L_cls^pu (Eq. 8, Section 2.2.1;
    docs/method.md#binary-pu-risk).

    .. math::

        L = \frac{\pi}{N_p}\sum_{i\in P} H(c_i,1)
          + \max\Big\{0, \frac{1}{N_u+N_p}\sum_{k\in U\cup P} H(c_k,0)
                         - \frac{\pi}{N_p}\sum_{i\in P} H(c_i,0)\Big\}

    where z = 1 is the positive (cell) class and z = 0 the negative one. The expectation
    E_x[H(c,0)] is estimated over U ∪ P (``estimator='union'``, the paper's proposal),
    or over U only (``'unlabeled'``, the naive approximation of Section 2.2.1). Label
    weights multiply every H term and the N's are sums of weights. See :func:`pu_risk`
    for the nnPU option.

    Use it like mmdet's ``CrossEntropyLoss``: ``use_sigmoid=True`` takes one logit
    channel (RPN: label 0 positive, 1 unlabeled); ``use_sigmoid=False`` takes two
    channels, index 0 the positive class and index 1 the background (RPN with softmax,
    or a ``num_classes=1`` bbox head). Heads apply sigmoid / softmax at test time exactly
    as with cross entropy.

    The prior is the buffer ``prior`` (0-dim), saved in checkpoints and changeable in
    place (``loss.prior.fill_(p)``). Loading a checkpoint restores the prior it holds.

    Args:
        prior (float): Positive class prior pi, 0 < pi < 1. In a composed Faster R-CNN
            config the keys are ``model.rpn_head.loss_cls.prior`` and
            ``model.roi_head.bbox_head.loss_cls.prior``.
        use_sigmoid (bool): Sigmoid BCE on one channel instead of softmax CE on two.
        estimator (str): ``'union'`` (default) or ``'unlabeled'``.
        nonnegative (str): ``'clamp'`` (the paper, default) or ``'nnpu'``.
        beta (float): nnPU threshold (``nonnegative='nnpu'`` only).
        gamma (float): nnPU ascent factor (``nonnegative='nnpu'`` only).
        loss_weight (float): Weight of the loss.
    """

    def __init__(self,
                 prior: float,
                 use_sigmoid: bool = False,
                 estimator: str = 'union',
                 nonnegative: str = 'clamp',
                 beta: float = 0.0,
                 gamma: float = 1.0,
                 loss_weight: float = 1.0) -> None:
        super().__init__(estimator, nonnegative, beta, gamma, loss_weight)
        self.use_sigmoid = use_sigmoid
        self.register_buffer(
            'prior', torch.tensor(check_prior(prior, 'loss_cls.prior (PULoss)')))

    @property
    def class_priors(self) -> Tensor:
        return self.prior.reshape(1)

    def _check_channels(self, cls_score: Tensor) -> None:
        if self.use_sigmoid:
            self._check_channel_count(cls_score, 1, 'one sigmoid logit')
        else:
            self._check_channel_count(
                cls_score, 2, 'positive and background logits; PULoss is binary, '
                'use MultiPULoss for several positive classes')

    def extra_repr(self) -> str:
        return (f'prior={self.prior.item():.4g}, use_sigmoid={self.use_sigmoid}, '
                + super().extra_repr())


@MODELS.register_module()
class MultiPULoss(BasePULoss):
    r"""Multi-class PU classification loss, the paper's L_cls^mpu (Section 2.2.2).

    Softmax cross entropy over C positive classes and the background (last channel),
    class priors pi_m and N_p^m positives of class m (docs/method.md#multi-class-pu-risk):

    .. math::

        L = \sum_m \frac{\pi_m}{N_p^m}\sum_{i\in P_m} H(c_i,m)
          + \max\Big\{0, \frac{1}{N_u+\sum_m N_p^m}\sum_{k\in U\cup P} H(c_k,bg)
                         - \sum_m \frac{\pi_m}{N_p^m}\sum_{i\in P_m} H(c_i,bg)\Big\}

    A class without positives in the batch contributes no terms. Estimator, weights and
    nnPU options as in :class:`PULoss`.

    The priors are the buffer ``priors`` of shape (C,), saved in checkpoints and changed
    in place by the prior-update hook (``loss.priors.copy_(new)``, Section 2.3).

    Inside an mmdet ``BBoxHead`` the loss checks at build time that it holds one prior
    per class of the head (mmdet's ``custom_cls_channels`` protocol: the head asks the
    loss for its number of score channels). Activation and accuracy stay those of
    cross entropy: ``get_activation`` is the head's plain softmax.

    Args:
        priors (list[float]): One prior per positive class, each in (0, 1), sum < 1.
            In a composed Faster R-CNN config: ``model.roi_head.bbox_head.loss_cls.priors``.
        estimator (str): ``'union'`` (default) or ``'unlabeled'``.
        nonnegative (str): ``'clamp'`` (the paper, default) or ``'nnpu'``.
        beta (float): nnPU threshold (``nonnegative='nnpu'`` only).
        gamma (float): nnPU ascent factor (``nonnegative='nnpu'`` only).
        loss_weight (float): Weight of the loss.
        use_sigmoid (bool): Must be False (softmax). Accepted so that the loss can
            replace the type of mmdet's ``CrossEntropyLoss`` dicts, which carry
            ``use_sigmoid=False`` (e.g. every stage of mmdet's Cascade R-CNN).
    """

    use_sigmoid = False
    custom_cls_channels = True

    def __init__(self,
                 priors: list,
                 estimator: str = 'union',
                 nonnegative: str = 'clamp',
                 beta: float = 0.0,
                 gamma: float = 1.0,
                 loss_weight: float = 1.0,
                 use_sigmoid: bool = False) -> None:
        if use_sigmoid is not False:
            raise ValueError(
                f'loss_cls.use_sigmoid: MultiPULoss is a softmax loss over the classes '
                f'and the background, got use_sigmoid={use_sigmoid!r}')
        super().__init__(estimator, nonnegative, beta, gamma, loss_weight)
        values = check_priors(priors, 'loss_cls.priors (MultiPULoss)')
        self.register_buffer('priors', torch.tensor(values))

    @property
    def class_priors(self) -> Tensor:
        return self.priors

    def get_cls_channels(self, num_classes: int) -> int:
        """Score channels of a bbox head with ``num_classes`` positive classes.

        Raises:
            ValueError: if the loss does not hold one prior per class.
        """
        if num_classes != self.priors.numel():
            raise ValueError(
                f'model.roi_head.bbox_head.loss_cls.priors: expected {num_classes} '
                f'values (one per positive class, bbox_head.num_classes='
                f'{num_classes}), got {self.priors.numel()}: {self.priors.tolist()}')
        return num_classes + 1

    def get_activation(self, cls_score: Tensor) -> Tensor:
        """Class probabilities, the softmax an mmdet ``BBoxHead`` applies for CE."""
        return F.softmax(cls_score, dim=-1)

    def _check_channels(self, cls_score: Tensor) -> None:
        num_classes = self.priors.numel()
        self._check_channel_count(
            cls_score, num_classes + 1,
            f'{num_classes} positive classes from loss_cls.priors + background')

    def extra_repr(self) -> str:
        return f'priors={self.priors.tolist()}, ' + super().extra_repr()
