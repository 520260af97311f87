r"""PU risks of sigmoid dense (one-stage) heads (docs/method.md#dense-detectors):
:class:`FocalPULoss` (RetinaNet, FCOS, ATSS) and :class:`QualityFocalPULoss` (GFL,
RTMDet).

A head has C logits per location and no background logit. With the detector's own
per-channel terms l+ (class present) and l- (absent), the losses of a location are
(docs/method.md#h-for-a-sigmoid-head)

    H(c, bg) = sum_j l-(c_j),    H(c, m) = l+(c_m) + sum_{j != m} l-(c_j).
"""
import torch
import torch.nn.functional as F
from torch import Tensor

from mmdet.registry import MODELS
from .base_pu_loss import BasePULoss


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


class DensePULoss(BasePULoss):
    """Base of the PU risks of sigmoid dense heads (docs/method.md#dense-detectors).

    The loss is the risk of :func:`~.base_pu_loss.nonnegative_risk` divided by
    sum_m pi_m, the risk per expected positive location (``risk_scale='per_positive'``;
    docs/method.md#normaliser-of-the-dense-risk), or the risk as it stands
    (``'per_location'``). It needs every location of the mini-batch in one call: use
    the PU heads (docs/method.md#one-estimate-per-mini-batch). Config keys:
    ``model.bbox_head.loss_cls.prior`` (one class, 0-dim buffer ``prior``) or
    ``model.bbox_head.loss_cls.priors`` (one per class, ``(C,)`` buffer ``priors``).

    Args (keyword arguments of every subclass):
        prior (float, optional): pi of a one-class head, 0 < pi < 1.
        priors (list[float], optional): One prior per class, each in (0, 1), sum < 1.
        use_sigmoid (bool): Must be True (read by the head for its channel count).
        estimator (str): ``'union'`` (U ∪ P, Eq. 6; default) or ``'unlabeled'``.
        nonnegative (str): ``'clamp'`` (Eq. 7; default) or ``'nnpu'``.
        nnpu_beta (float): nnPU threshold, named apart from the detector's ``beta``.
        nnpu_gamma (float): nnPU ascent factor, named apart from the focal ``gamma``.
        risk_scale (str): ``'per_positive'`` (default) or ``'per_location'``.
        per_level (bool): Keep the bracket non-negative per FPN level, R_p + sum_l
            max{0, r_l} (docs/method.md#level-wise-bracket), instead of max{0, r} over
            the mini-batch; the clamp only. The PU heads pass the levels.
        loss_weight (float): Weight of the loss.
    """

    #: dense PU heads read this to build a sigmoid classifier by default
    sigmoid_only = True
    nnpu_keys = ('nnpu_beta', 'nnpu_gamma')

    def __init__(self,
                 prior: float = None,
                 priors: list = None,
                 use_sigmoid: bool = True,
                 estimator: str = 'union',
                 nonnegative: str = 'clamp',
                 nnpu_beta: float = 0.0,
                 nnpu_gamma: float = 1.0,
                 risk_scale: str = 'per_positive',
                 per_level: bool = False,
                 loss_weight: float = 1.0) -> None:
        super().__init__(estimator, nonnegative, nnpu_beta, nnpu_gamma, risk_scale,
                         loss_weight)
        if not isinstance(per_level, bool):
            raise ValueError(f'loss_cls.per_level: expected True or False, got '
                             f'{per_level!r}')
        if per_level and nonnegative != 'clamp':
            raise ValueError(f"loss_cls.per_level: the bracket per level takes "
                             f"nonnegative='clamp', got nonnegative={nonnegative!r}")
        self.per_level = per_level
        self._check_use_sigmoid(use_sigmoid, True, 'sigmoid loss (one logit per class)')
        self.use_sigmoid = True
        if (prior is None) == (priors is None):
            raise ValueError(
                f'loss_cls.prior / loss_cls.priors ({type(self).__name__}): expected '
                f'exactly one, prior for a one-class head or priors with one value per '
                f'class, got prior={prior!r}, priors={priors!r}')
        if prior is not None:
            self._register_prior('prior', prior)
        else:
            self._register_prior('priors', priors)

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

    def extra_repr(self) -> str:
        return super().extra_repr() + f', per_level={self.per_level}'

    def score_channels(self) -> tuple:
        num_classes = self.class_priors.numel()
        return num_classes, (f'one sigmoid logit per class, {num_classes} from '
                             f'loss_cls.{self.prior_key}; a head built with '
                             f'use_sigmoid=False has one more')


@MODELS.register_module()
class FocalPULoss(DensePULoss):
    r"""PU risk of a focal-loss head (RetinaNet, FCOS, ATSS; docs/method.md#dense-detectors).

    Eq. 15 (Eq. 8 for one class) with H the focal terms of :func:`focal_terms`:

    .. math::

        R = \sum_m \frac{\pi_m}{N_p^m} \sum_{i \in P_m} H(c_i, m)
          + \max\Big\{0, \frac{1}{N_u + \sum_m N_p^m} \sum_{k \in U \cup P} H(c_k, bg)
                         - \sum_m \frac{\pi_m}{N_p^m} \sum_{i \in P_m} H(c_i, bg)\Big\}

    and the loss is ``loss_weight * R / sum_m pi_m`` (``loss_weight * R`` with
    ``risk_scale='per_location'``). With every cell labeled and pi_m = N_p^m / N it is
    mmdet's ``FocalLoss(avg_factor=N_p)``
    (docs/method.md#where-it-reduces-to-the-detectors-loss). The target is the head's
    labels ``(N,)``, ``C`` = unlabeled.

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

    def loss_terms(self, cls_score: Tensor, labels: Tensor, quality) -> tuple:
        return focal_terms(cls_score, labels, self.gamma, self.alpha)

    def extra_repr(self) -> str:
        return f'gamma={self.gamma}, alpha={self.alpha}, ' + super().extra_repr()


@MODELS.register_module()
class QualityFocalPULoss(DensePULoss):
    r"""PU risk of a quality-focal head (GFL, RTMDet; docs/method.md#dense-detectors).

    The risk of :class:`FocalPULoss` with H the terms of :func:`quality_focal_terms`,
    y_i the head's soft target of a labeled positive i (unlabeled cells need none):

    .. math::

        H(c_i, m; y_i) = |y_i - p_m|^\beta \mathrm{BCE}(c_m, y_i)
                       + \sum_{j \ne m} p_j^\beta (-\log(1 - p_j)),
        \qquad H(c, bg) = \sum_j p_j^\beta (-\log(1 - p_j)).

    With every cell labeled and pi_m = N_p^m / N it is mmdet's
    ``QualityFocalLoss(avg_factor=N_p)``. The target is the head's tuple
    ``(labels, quality)``, both ``(N,)``.

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
