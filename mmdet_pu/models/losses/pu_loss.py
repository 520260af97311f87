"""Cross-entropy PU losses of two-stage detectors: :class:`PULoss` (binary, the paper's
L_cls^pu), :class:`MultiPULoss` (multi-class, L_cls^mpu) and
:class:`FactorizedMultiPULoss` (L_cls^mpu with the cell and its class factorized);
docs/method.md#binary-pu-risk.

Labels follow mmdet's encoding (docs/method.md#sample-sets): with ``C`` positive classes,
``label == m < C`` is a labeled positive of class m, ``label == C`` unlabeled.
"""
import torch
import torch.nn.functional as F
from torch import Tensor

from mmdet.models.losses import accuracy
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


def factorized_terms(cls_score: Tensor, labels: Tensor) -> tuple:
    """Per-sample H(c, label) and H(c, background) of a factorized classifier.

    The ``(N, C + 1)`` scores hold C class logits z and, last, one background logit b:
    p_bg = sigmoid(b) and p_m = (1 - p_bg) q_m with q = softmax(z). Hence

        H(c, m)  = -log(1 - sigmoid(b)) - log q_m = softplus(b) + H(q, m)
        H(c, bg) = -log sigmoid(b)                = softplus(-b)

    Args:
        cls_score (Tensor): ``(N, C + 1)`` logits, the background last.
        labels (Tensor): ``(N,)`` labels in ``[0, C]``; H(c, label) is only meaningful
            for positives (label < C).

    Returns:
        tuple[Tensor, Tensor]: ``h_label`` (N,) and ``h_bg`` (N,).
    """
    num_classes = cls_score.size(1) - 1
    background = cls_score[:, -1]
    log_q = F.log_softmax(cls_score[:, :-1], dim=1)
    class_index = labels.reshape(-1, 1).clamp(max=num_classes - 1)
    h_class = -log_q.gather(1, class_index).reshape(-1)
    return F.softplus(background) + h_class, F.softplus(-background)


@MODELS.register_module()
class FactorizedMultiPULoss(MultiPULoss):
    r"""Multi-class PU classification loss with the cell and its class factorized
    (docs/method.md#factorized-multi-class-pu-risk).

    The risk is :class:`MultiPULoss`'s (Eq. 15), with H of :func:`factorized_terms`: the
    head's C + 1 channels are C class logits and one background logit b, p_bg =
    sigmoid(b), p_m = (1 - p_bg) softmax(z)_m. So

    .. math::

        L = \sum_m \frac{\pi_m}{N_p^m}\sum_{i\in P_m} \big[H(c_i,\mathrm{cell})
              + H(q_i,m)\big]
          + \max\Big\{0, \frac{1}{N_u+\sum_m N_p^m}\sum_{k\in U\cup P} H(c_k,bg)
                         - \sum_m \frac{\pi_m}{N_p^m}\sum_{i\in P_m} H(c_i,bg)\Big\}

    The bracket's gradient reaches b only. With the plain softmax it also reaches every
    class logit, in proportion to its probability: each unlabeled cell pushed towards the
    background flattens its class posterior. Here the class posterior q learns from the
    labeled cells alone, each class weighted by pi_m / N_p^m, i.e. at its share of the
    cells, however many of it were labeled. Predictions are (p_1, ..., p_C, p_bg); the
    priors and ``PriorUpdateHook`` are :class:`MultiPULoss`'s. Config key:
    ``model.roi_head.bbox_head.loss_cls.priors``.

    Args:
        priors, estimator, nonnegative, beta, gamma, loss_weight, use_sigmoid: As
            :class:`MultiPULoss`.
    """

    # mmdet's BBoxHead asks the loss for its probabilities and its accuracy
    custom_activation = True
    custom_accuracy = True

    def get_activation(self, cls_score: Tensor) -> Tensor:
        """``(p_1, ..., p_C, p_bg)``: p_bg = sigmoid(b), p_m = (1 - p_bg) softmax(z)_m."""
        cls_score = cls_score.float()
        p_bg = torch.sigmoid(cls_score[:, -1:])
        return torch.cat([(1 - p_bg) * F.softmax(cls_score[:, :-1], dim=-1), p_bg],
                         dim=-1)

    def get_accuracy(self, cls_score: Tensor, labels: Tensor) -> dict:
        """mmdet's accuracy of the arg-max of the probabilities, in per cent."""
        return dict(acc=accuracy(self.get_activation(cls_score), labels))

    def score_channels(self) -> tuple:
        num_classes = self.priors.numel()
        return num_classes + 1, (f'{num_classes} class logits from loss_cls.priors + '
                                 f'one background logit')

    def loss_terms(self, cls_score: Tensor, labels: Tensor, quality) -> tuple:
        return factorized_terms(cls_score, labels)


def background_cross_entropy(cls_score: Tensor, loss_cls) -> Tensor:
    """``(N,)`` H(c, bg) = -log p_bg of the ``(N, C + 1)`` scores of a bbox head whose
    classifier is ``loss_cls``: softplus(-b) for :class:`FactorizedMultiPULoss`, the
    softmax cross entropy of the last channel otherwise."""
    if isinstance(loss_cls, FactorizedMultiPULoss):
        return F.softplus(-cls_score[:, -1])
    return -F.log_softmax(cls_score, dim=1)[:, -1]
