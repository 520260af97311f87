r"""PU classification risks for dense (one-stage) detection heads
(docs/method.md#dense-detectors).

* :class:`FocalPULoss`, the focal-loss family (RetinaNet, FCOS, ATSS);
* :class:`QualityFocalPULoss`, the quality-focal family (GFL, RTMDet).

Both take the sigmoid classifier of a dense head: ``C`` logits per location, one per
class, no background logit. Sample sets follow MMDetection's target encoding
(docs/method.md#sample-sets): a location with ``label == m`` (0 <= m < C) is a labeled
positive of class m (the head's own assigner made it positive for a labeled cell), one
with ``label == C`` is unlabeled, one with ``label_weight == 0`` is ignored.

With p_j = sigmoid(c_j), the loss of a location is a sum over its class channels. The
background is "every class absent": all C logits are pushed negative,

.. math::

    H(c, bg) = \sum_j \ell^-(c_j), \qquad
    H(c, m)  = \ell^+_m(c_m) + \sum_{j \ne m} \ell^-(c_j),

with the detector's own per-channel terms (:func:`focal_terms`,
:func:`quality_focal_terms`). Both enter the paper's risk (:func:`pu_risk`, Eq. 8 and
Eq. 15 with the U ∪ P estimate of Eq. 6 and the correction of Eq. 7) exactly where the
cross entropy H enters for Faster R-CNN: the risk rewrites an expectation over
locations, E[H(c, z)], and that rewriting (Eq. 5 / Eq. 12) holds for any per-location
loss of the true class.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from mmdet.registry import MODELS
from .pu_loss import check_prior, check_priors, check_risk_options, pu_risk

#: How the risk is scaled: per expected positive location (like mmdet's
#: ``avg_factor = num_pos``) or per location (the paper's expectation as it stands).
RISK_SCALES = ('per_positive', 'per_location')


def focal_terms(cls_score: Tensor, labels: Tensor, gamma: float = 2.0,
                alpha: float = 0.25) -> tuple:
    r"""Per-location focal losses H(c, label) and H(c, bg) of a sigmoid head.

    The per-channel terms of mmdet's ``FocalLoss`` (Lin et al. 2017), p = sigmoid(x):

    .. math::

        \ell^+(x) = \alpha (1 - p)^\gamma (-\log p), \qquad
        \ell^-(x) = (1 - \alpha) p^\gamma (-\log(1 - p)),

    summed over the C channels with the label's channel positive (H(c, m)) or none
    (H(c, bg)). Computed from log-sigmoids, finite for any logit.

    Args:
        cls_score (Tensor): ``(N, C)`` logits.
        labels (Tensor): ``(N,)`` labels in ``[0, C]``, ``C`` the background.
        gamma (float): Focusing parameter.
        alpha (float): Weight of the positive term.

    Returns:
        tuple[Tensor, Tensor]: ``h_label`` (N,), H(c, label) (H(c, bg) where the label
        is the background) and ``h_bg`` (N,).
    """
    log_p, log_q = F.logsigmoid(cls_score), F.logsigmoid(-cls_score)
    negative = (1 - alpha) * torch.exp(gamma * log_p) * -log_q
    positive = alpha * torch.exp(gamma * log_q) * -log_p
    return _label_and_background(negative, positive, labels)


def quality_focal_terms(cls_score: Tensor, labels: Tensor, quality: Tensor,
                        beta: float = 2.0) -> tuple:
    r"""Per-location quality focal losses H(c, label; y) and H(c, bg) of a sigmoid head.

    The per-channel terms of mmdet's ``QualityFocalLoss`` (Li et al. 2020), p =
    sigmoid(x), with the soft target y (IoU or assignment quality) of a positive:

    .. math::

        \ell^+(x, y) = |y - p|^\beta \, \mathrm{BCE}(x, y), \qquad
        \ell^-(x) = \ell^+(x, 0) = p^\beta (-\log(1 - p)),

    summed over the C channels: the label's channel with its target y (H(c, m; y)) or
    every channel with target 0 (H(c, bg)).

    Args:
        cls_score (Tensor): ``(N, C)`` logits.
        labels (Tensor): ``(N,)`` labels in ``[0, C]``, ``C`` the background.
        quality (Tensor): ``(N,)`` soft targets; read for positives only.
        beta (float): Exponent of the modulation.

    Returns:
        tuple[Tensor, Tensor]: ``h_label`` (N,) and ``h_bg`` (N,), as
        :func:`focal_terms`.
    """
    negative = F.softplus(cls_score) * cls_score.sigmoid().pow(beta)
    channel = labels.clamp(max=cls_score.size(1) - 1).reshape(-1, 1)
    logit = cls_score.gather(1, channel).reshape(-1)
    quality = quality.reshape(-1).to(cls_score)
    positive = F.binary_cross_entropy_with_logits(
        logit, quality, reduction='none') * (quality - logit.sigmoid()).abs().pow(beta)
    return _label_and_background(negative, positive, labels, gathered=True)


def _label_and_background(negative: Tensor, positive: Tensor, labels: Tensor,
                          gathered: bool = False) -> tuple:
    """H(c, label) and H(c, bg) from per-channel terms ``(N, C)``.

    ``positive`` holds the positive term of every channel ``(N, C)``, or of the label's
    channel only ``(N,)`` when ``gathered``.
    """
    num_classes = negative.size(1)
    h_bg = negative.sum(dim=1)
    channel = labels.clamp(max=num_classes - 1).reshape(-1, 1)
    if not gathered:
        positive = positive.gather(1, channel).reshape(-1)
    swap = positive - negative.gather(1, channel).reshape(-1)
    is_positive = labels < num_classes
    return h_bg + torch.where(is_positive, swap, torch.zeros_like(swap)), h_bg


class DensePULoss(nn.Module):
    """Shared forward of :class:`FocalPULoss` and :class:`QualityFocalPULoss`.

    Subclasses provide ``loss_terms(cls_score, labels, quality)`` (H(c, label) and
    H(c, bg) per location) and ``split_target(target)`` (labels and soft targets).

    **One estimate per mini-batch.** The risk is non-linear (``max{0, .}``, per-set
    normalisers), so it must see every location of the mini-batch at once: all images
    and all FPN levels. mmdet's RetinaNet, ATSS, GFL and RTMDet heads call ``loss_cls``
    once per level; use the PU heads (``PURetinaHead``, ``PUATSSHead``, ``PUGFLHead``,
    ``PURTMDetHead``, ``PURTMDetSepBNHead``; ``PUFCOSHead`` for symmetry, FCOS already
    makes one call), which pool the levels into one call. In mmdet's own heads the loss
    would estimate one risk per level and sum them.

    **Normaliser.** The risk is a mean over locations (the U ∪ P estimate divides by the
    weighted count of unignored locations, N = N_u + sum_m N_p^m); ``avg_factor`` is
    accepted for interface compatibility and ignored. mmdet's focal losses divide their
    sum by the number of positive locations instead (RetinaNet, ATSS, FCOS, GFL; RTMDet
    by the sum of its soft targets), so the mean is smaller than the detector's loss by
    the share of positive locations, which is the prior itself, tiny for a dense
    head. The labeled count cannot replace that normaliser under incomplete
    labels (it misses the unlabeled cells); its PU estimate is N * sum_m pi_m. So with
    ``risk_scale='per_positive'`` (the default) the loss is the risk divided by
    sum_m pi_m: the summed risk per expected positive location. With complete labels and
    pi_m = N_p^m / N the loss is then exactly mmdet's loss with
    ``avg_factor = N_p`` (docs/method.md#dense-detectors), so mmdet's
    ``loss_weight=1.0`` and learning rates keep their gradient scale. Dividing by a
    constant moves neither the minimiser nor the ``max{0, .}``, which commutes with it.
    ``risk_scale='per_location'`` returns the mean as in Eq. 8 / Eq. 15, like
    :class:`PULoss`.

    **Priors.** ``prior`` (float) for a one-class head, held in the 0-dim buffer
    ``prior``; ``priors`` (one per class) otherwise, in the ``(C,)`` buffer ``priors``.
    pi_m is the share of the head's unignored locations (anchors or points, all levels)
    that its assigner would make positive for class m if every cell were labeled: tiny,
    like the RPN's (docs/method.md#priors-per-stage). The buffers are saved in
    checkpoints and can be set in place (``loss.prior.fill_(p)``). Config keys:
    ``model.bbox_head.loss_cls.prior`` / ``model.bbox_head.loss_cls.priors``.

    The estimator and the non-negative correction are :func:`pu_risk`'s; the nnPU
    threshold and ascent factor are named ``nnpu_beta`` / ``nnpu_gamma`` here because
    ``gamma`` (focal) and ``beta`` (quality focal) are the detector's own parameters,
    and they act on the unscaled bracket. Half-precision scores are evaluated in
    float32.

    Args (every subclass takes them as keyword arguments):
        prior (float, optional): pi of a one-class head, 0 < pi < 1.
        priors (list[float], optional): One prior per class, each in (0, 1), sum < 1.
        use_sigmoid (bool): Must be True (read by the head for its channel count).
        estimator (str): ``'union'`` (U ∪ P, the paper's, default) or ``'unlabeled'``
            (naive, U only).
        nonnegative (str): ``'clamp'`` (the paper's max{0, .}, default) or ``'nnpu'``.
        nnpu_beta (float): nnPU threshold (``nonnegative='nnpu'`` only).
        nnpu_gamma (float): nnPU ascent factor (``nonnegative='nnpu'`` only).
        risk_scale (str): ``'per_positive'`` (default) or ``'per_location'``.
        loss_weight (float): Weight of the loss.
    """

    #: dense PU heads read this to build a sigmoid classifier by default
    sigmoid_only = True

    def __init__(self,
                 prior: float = None,
                 priors: list = None,
                 use_sigmoid: bool = True,
                 estimator: str = 'union',
                 nonnegative: str = 'clamp',
                 nnpu_beta: float = 0.0,
                 nnpu_gamma: float = 1.0,
                 risk_scale: str = 'per_positive',
                 loss_weight: float = 1.0) -> None:
        super().__init__()
        name = type(self).__name__
        if use_sigmoid is not True:
            raise ValueError(f'loss_cls.use_sigmoid: {name} is a sigmoid loss (one '
                             f'logit per class), got use_sigmoid={use_sigmoid!r}')
        check_risk_options(name, estimator, nonnegative, nnpu_beta, nnpu_gamma,
                           beta_key='nnpu_beta', gamma_key='nnpu_gamma')
        if risk_scale not in RISK_SCALES:
            raise ValueError(f'loss_cls.risk_scale: expected one of {RISK_SCALES} for '
                             f'{name}, got {risk_scale!r}')
        if (prior is None) == (priors is None):
            raise ValueError(
                f'loss_cls.prior / loss_cls.priors ({name}): expected exactly one, '
                f'prior for a one-class head or priors with one value per class, got '
                f'prior={prior!r}, priors={priors!r}')
        if prior is not None:
            self.register_buffer(
                'prior', torch.tensor(check_prior(prior, f'loss_cls.prior ({name})')))
        else:
            self.register_buffer(
                'priors', torch.tensor(check_priors(priors, f'loss_cls.priors ({name})')))
        self.use_sigmoid = True
        self.estimator = estimator
        self.nonnegative = nonnegative
        self.nnpu_beta = float(nnpu_beta)
        self.nnpu_gamma = float(nnpu_gamma)
        self.risk_scale = risk_scale
        self.loss_weight = loss_weight

    @property
    def class_priors(self) -> Tensor:
        """The ``(C,)`` class priors, from ``prior`` or ``priors``."""
        return self.priors if hasattr(self, 'priors') else self.prior.reshape(1)

    @property
    def prior_key(self) -> str:
        """``'prior'`` or ``'priors'``: the buffer (and config key) holding pi."""
        return 'priors' if hasattr(self, 'priors') else 'prior'

    def check_num_classes(self, num_classes: int) -> None:
        """Raise a ``ValueError`` unless the loss holds one prior per class of the head.

        Called by the dense PU heads when they are built.
        """
        count = self.class_priors.numel()
        if count != num_classes:
            raise ValueError(
                f'model.bbox_head.loss_cls.{self.prior_key}: expected {num_classes} '
                f'value(s), one per class (bbox_head.num_classes={num_classes}), got '
                f'{count}: {self.class_priors.tolist()}; a head with several classes '
                f'takes loss_cls.priors')

    def forward(self,
                cls_score: Tensor,
                target,
                weight: Tensor = None,
                avg_factor: float = None,
                reduction_override: str = None) -> Tensor:
        """Compute the PU classification risk of a whole mini-batch.

        Args:
            cls_score (Tensor): ``(N, C)`` logits, one per class.
            target: The head's classification target (see the subclass).
            weight (Tensor, optional): ``(N,)`` label weights; 0 ignores a location.
            avg_factor (float, optional): Ignored, the risk normalises itself.
            reduction_override (str, optional): ``None`` or ``'mean'``.

        Returns:
            Tensor: Scalar loss, float32 (float64 for float64 scores).
        """
        name = type(self).__name__
        if reduction_override not in (None, 'mean'):
            raise ValueError(
                f'{name} is a batch-level risk and only supports the '
                f"'mean' reduction, got reduction_override={reduction_override!r}")
        num_classes = self.class_priors.numel()
        if cls_score.dim() != 2 or cls_score.size(1) != num_classes:
            raise ValueError(
                f'{name}: expected cls_score of shape (N, {num_classes}) (one sigmoid '
                f'logit per class, {num_classes} from loss_cls.{self.prior_key}; a head '
                f'built with use_sigmoid=False has one more), got '
                f'{tuple(cls_score.shape)}')
        cls_score = cls_score.to(torch.promote_types(cls_score.dtype, torch.float32))
        labels, quality = self.split_target(target)
        labels = labels.reshape(-1)
        if labels.numel() != cls_score.size(0):
            raise ValueError(f'{name}: expected {cls_score.size(0)} labels (one per '
                             f'location of cls_score), got {labels.numel()}')
        weight = (torch.ones_like(cls_score[:, 0]) if weight is None
                  else weight.reshape(-1).to(cls_score.dtype))
        h_label, h_bg = self.loss_terms(cls_score, labels, quality)
        priors = self.class_priors.to(cls_score)
        risk = pu_risk(h_label, h_bg, labels, weight, priors,
                       estimator=self.estimator, nonnegative=self.nonnegative,
                       beta=self.nnpu_beta, gamma=self.nnpu_gamma)
        if self.risk_scale == 'per_positive':
            risk = risk / priors.sum()
        return self.loss_weight * risk

    def extra_repr(self) -> str:
        return (f'{self.prior_key}={self.class_priors.tolist()}, '
                f'estimator={self.estimator!r}, nonnegative={self.nonnegative!r}, '
                f'nnpu_beta={self.nnpu_beta}, nnpu_gamma={self.nnpu_gamma}, '
                f'risk_scale={self.risk_scale!r}, loss_weight={self.loss_weight}')


@MODELS.register_module()
class FocalPULoss(DensePULoss):
    r"""PU risk of a focal-loss head (RetinaNet, FCOS, ATSS; docs/method.md#dense-detectors).

    With the focal terms of :func:`focal_terms`, class priors pi_m, weighted counts
    N_p^m of the labeled positives P_m and N_u of the unlabeled locations U:

    .. math::

        R = \sum_m \frac{\pi_m}{N_p^m} \sum_{i \in P_m} H(c_i, m)
          + \max\Big\{0, \frac{1}{N_u + \sum_m N_p^m} \sum_{k \in U \cup P} H(c_k, bg)
                         - \sum_m \frac{\pi_m}{N_p^m} \sum_{i \in P_m} H(c_i, bg)\Big\}

    (Eq. 15; Eq. 8 for one class), and the loss is ``loss_weight * R / sum_m pi_m``
    (``risk_scale='per_positive'``) or ``loss_weight * R``. The focal modulation and
    alpha weighting are part of H: the risk weights a labeled positive's positive term
    alpha (1 - p)^gamma (-log p) by pi_m / N_p^m, and estimates the background terms
    (1 - alpha) p^gamma (-log(1 - p)) of the truly negative locations as the U ∪ P mean
    less the positives' share. ``gamma=0, alpha=0.5`` gives half the sigmoid BCE.

    Where it reduces to mmdet's ``FocalLoss``: with every cell labeled, the union
    estimator and pi_m = N_p^m / N (the batch's true share of positives), the bracket
    is the unlabeled (now negative) locations' sum over N, never clamped, and the loss
    equals ``FocalLoss(avg_factor=N_p)`` exactly. As pi -> 0 the risk tends to the
    all-background loss E_{U ∪ P}[H(c, bg)], not to the focal loss.

    The target is the head's ``labels`` tensor ``(N,)`` (``C`` = unlabeled). Other
    arguments and buffers: :class:`DensePULoss`.

    Args:
        gamma (float): Focal focusing parameter, as ``FocalLoss``. Defaults to 2.0.
        alpha (float): Focal positive weight, as ``FocalLoss``. Defaults to 0.25.
        **kwargs: The prior(s) and the risk options of :class:`DensePULoss`.
    """

    def __init__(self, gamma: float = 2.0, alpha: float = 0.25, **kwargs) -> None:
        super().__init__(**kwargs)
        if not gamma >= 0:
            raise ValueError(f'loss_cls.gamma: expected the focal gamma >= 0, got {gamma}')
        if not 0 <= alpha <= 1:
            raise ValueError(f'loss_cls.alpha: expected 0 <= alpha <= 1, got {alpha}')
        self.gamma = float(gamma)
        self.alpha = float(alpha)

    def split_target(self, target) -> tuple:
        if not isinstance(target, Tensor):
            raise ValueError(f'{type(self).__name__}: expected the target to be a '
                             f'labels tensor (N,), got {type(target).__name__}; heads '
                             f'with (labels, quality) targets take QualityFocalPULoss')
        return target, None

    def loss_terms(self, cls_score: Tensor, labels: Tensor, quality) -> tuple:
        return focal_terms(cls_score, labels, self.gamma, self.alpha)

    def extra_repr(self) -> str:
        return f'gamma={self.gamma}, alpha={self.alpha}, ' + super().extra_repr()


@MODELS.register_module()
class QualityFocalPULoss(DensePULoss):
    r"""PU risk of a quality-focal head (GFL, RTMDet; docs/method.md#dense-detectors).

    The risk R of :class:`FocalPULoss` with the quality focal terms of
    :func:`quality_focal_terms`: a labeled positive i of class m has the soft target
    y_i of the head (GFL: the IoU of its predicted box with the cell's box; RTMDet: the
    assigner's IoU), so

    .. math::

        H(c_i, m; y_i) = |y_i - p_m|^\beta \mathrm{BCE}(c_m, y_i)
                       + \sum_{j \ne m} p_j^\beta (-\log(1 - p_j)),
        \qquad H(c, bg) = \sum_j p_j^\beta (-\log(1 - p_j)).

    The soft target enters only the labeled positives' positive term
    pi_m / N_p^m sum_i H(c_i, m; y_i): the background part needs no target (y = 0), so
    the U ∪ P estimate of the truly negative locations' loss is the same as for the
    focal family, and unlabeled cells, which have no box and hence no y, are never
    needed.

    Where it reduces to mmdet's ``QualityFocalLoss``: as for :class:`FocalPULoss`, with
    every cell labeled, the union estimator and pi_m = N_p^m / N, the loss equals
    ``QualityFocalLoss(avg_factor=N_p)``: GFL's own loss exactly; RTMDet divides by the
    sum of the soft targets, so there the scale differs by N_p / sum_i y_i.

    The target is the head's tuple ``(labels, quality)``, both ``(N,)``.

    Args:
        beta (float): Exponent of the quality modulation, as ``QualityFocalLoss``.
            Defaults to 2.0.
        **kwargs: The prior(s) and the risk options of :class:`DensePULoss`.
    """

    def __init__(self, beta: float = 2.0, **kwargs) -> None:
        super().__init__(**kwargs)
        if not beta >= 0:
            raise ValueError(f'loss_cls.beta: expected the quality focal beta >= 0, '
                             f'got {beta}')
        self.beta = float(beta)

    def split_target(self, target) -> tuple:
        if not (isinstance(target, (tuple, list)) and len(target) == 2):
            raise ValueError(f'{type(self).__name__}: expected the target to be a tuple '
                             f'(labels, quality) of two (N,) tensors, got '
                             f'{type(target).__name__}; heads with a labels target '
                             f'take FocalPULoss')
        return target[0], target[1]

    def loss_terms(self, cls_score: Tensor, labels: Tensor, quality: Tensor) -> tuple:
        return quality_focal_terms(cls_score, labels, quality, self.beta)

    def extra_repr(self) -> str:
        return f'beta={self.beta}, ' + super().extra_repr()
