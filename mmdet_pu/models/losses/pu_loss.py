"""Cross-entropy PU losses of two-stage detectors: :class:`PULoss` (binary, the paper's
L_cls^pu) and :class:`MultiPULoss` (multi-class, L_cls^mpu); docs/method.md#binary-pu-risk.

Labels follow mmdet's encoding (docs/method.md#sample-sets): with ``C`` positive classes,
``label == m < C`` is a labeled positive of class m, ``label == C`` unlabeled.
"""
import torch.nn.functional as F
from torch import Tensor

from mmdet.registry import MODELS
from .base_pu_loss import BasePULoss


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


@MODELS.register_module()
class PULoss(BasePULoss):
    r"""Binary PU classification loss, the paper's L_cls^pu (Eq. 8;
    docs/method.md#binary-pu-risk):

    .. math::

        L = \frac{\pi}{N_p}\sum_{i\in P} H(c_i,1)
          + \max\Big\{0, \frac{1}{N_u+N_p}\sum_{k\in U\cup P} H(c_k,0)
                         - \frac{\pi}{N_p}\sum_{i\in P} H(c_i,0)\Big\}

    with H the cross entropy of :func:`cross_entropy_terms`, used like mmdet's
    ``CrossEntropyLoss``: ``use_sigmoid=True`` takes one logit (RPN: label 0 positive,
    1 unlabeled), ``False`` two, the positive class then the background. The prior is
    the 0-dim buffer ``prior``. Config keys: ``model.rpn_head.loss_cls.prior``,
    ``model.roi_head.bbox_head.loss_cls.prior``.

    Args:
        prior (float): Positive class prior pi, 0 < pi < 1.
        use_sigmoid (bool): Sigmoid BCE on one channel instead of softmax CE on two.
        estimator (str): ``'union'`` (U ∪ P, Eq. 6; default) or ``'unlabeled'``.
        nonnegative (str): ``'clamp'`` (Eq. 7; default) or ``'nnpu'``
            (docs/method.md#naive-pu-and-nnpu).
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
        super().__init__(estimator, nonnegative, beta, gamma, 'per_location',
                         loss_weight)
        self.use_sigmoid = use_sigmoid
        self._register_prior('prior', prior)

    def score_channels(self) -> tuple:
        if self.use_sigmoid:
            return 1, 'one sigmoid logit'
        return 2, ('positive and background logits; PULoss is binary, use MultiPULoss '
                   'for several positive classes')

    def loss_terms(self, cls_score: Tensor, labels: Tensor, quality) -> tuple:
        return cross_entropy_terms(cls_score, labels, self.use_sigmoid)

    def extra_repr(self) -> str:
        return f'use_sigmoid={self.use_sigmoid}, ' + super().extra_repr()


@MODELS.register_module()
class MultiPULoss(BasePULoss):
    r"""Multi-class PU classification loss, the paper's L_cls^mpu (Eq. 15;
    docs/method.md#multi-class-pu-risk):

    .. math::

        L = \sum_m \frac{\pi_m}{N_p^m}\sum_{i\in P_m} H(c_i,m)
          + \max\Big\{0, \frac{1}{N_u+\sum_m N_p^m}\sum_{k\in U\cup P} H(c_k,bg)
                         - \sum_m \frac{\pi_m}{N_p^m}\sum_{i\in P_m} H(c_i,bg)\Big\}

    with H the softmax cross entropy over the C classes and the background (last
    channel). The priors are the ``(C,)`` buffer ``priors``, which
    ``PriorUpdateHook`` sets in place (docs/method.md#prior-update). In an mmdet
    ``BBoxHead`` the loss checks that it holds one prior per class (mmdet's
    ``custom_cls_channels`` protocol); predictions stay the plain softmax's. Config
    key: ``model.roi_head.bbox_head.loss_cls.priors``.

    Args:
        priors (list[float]): One prior per positive class, each in (0, 1), sum < 1.
        estimator, nonnegative, beta, gamma, loss_weight: As :class:`PULoss`.
        use_sigmoid (bool): Must be False; accepted so that the loss can replace the
            type of mmdet's ``CrossEntropyLoss`` dicts.
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
        super().__init__(estimator, nonnegative, beta, gamma, 'per_location',
                         loss_weight)
        self._check_use_sigmoid(use_sigmoid, False,
                                'softmax loss over the classes and the background')
        self._register_prior('priors', priors)

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

    def score_channels(self) -> tuple:
        num_classes = self.priors.numel()
        return num_classes + 1, (f'{num_classes} positive classes from '
                                 f'loss_cls.priors + background')

    def loss_terms(self, cls_score: Tensor, labels: Tensor, quality) -> tuple:
        return cross_entropy_terms(cls_score, labels, self.use_sigmoid)
