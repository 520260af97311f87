"""Estimators of the class prior pi of each PU stage (docs/method.md#prior-selection).

pi is the share of true cells among the samples one stage's loss averages over (U ∪ P,
Eq. 6: the sampled anchors of the RPN, the sampled RoIs of the RoI head), so it depends
on the stage's sampler. :mod:`.samples` redraws those samples from a detector trained
with a provisional prior; each is a labeled positive (P) or unlabeled (U). With complete
labels the *oracle* share is the share of samples the stage's assigner makes positive.

* **Label frequency** (after Elkan & Noto, "Learning classifiers from only positive and
  unlabeled data", KDD 2008): the detector's detections with ``score >= score_thr``
  complete the labeled cells (:func:`pseudo_complete`), and the share is the oracle
  computation with these pseudo-complete cells; ``c = labeled / pseudo-complete cells``.
  Both stages.
* **BBE**, best-bin estimation (Garg, Wu, Smola, Balakrishnan & Lipton, "Mixture
  Proportion Estimation and PU Learning: A Modern Approach", NeurIPS 2021, Algorithm 1):
  with ``q_p(z)``, ``q_u(z)`` the shares of P and U scoring ``>= z``::

      z* = argmin_z [q_u(z) + (1 + gamma) (sqrt(log(4/delta) / (2 n_u))
                                           + sqrt(log(4/delta) / (2 n_p)))] / q_p(z)
      alpha = q_u(z*) / q_p(z*),   pi = (n_p + alpha n_u) / (n_p + n_u)

  RoI stage, on the *cell score* (``1 - p_bg`` of a softmax head with a background
  logit; ``1 - prod_m (1 - p_m)`` of a sigmoid one) with the labeled RoIs of every class
  as P: ``alpha`` is the share of cells of any class in U. With several classes those
  ``alpha n_u`` unlabeled cells are split between the classes in proportion to the
  detector's probability mass of each class over U, ``w_m = sum_U p_m / sum_U sum_k
  p_k``, so ``pi_m = (n_p,m + w_m alpha n_u) / n`` (with one class ``w = 1``). BBE on each
  class's own score (``P_m`` vs U) instead counts the cells of the other classes that
  score as class ``m`` too: on CRCHistoPhenotypes' four classes it gave 1.2-8 times the
  oracle shares, the split within 15 % of them but for one class of twelve
  (docs/research_log.md). The labeled cells' own boxes, added to the
  proposals in training, are left out of P for ``alpha`` and counted in ``n_p``.
* **Risk-matched prior**: the prior at which the losses' estimate of the negatives' risk,
  ``E_x[H(c,bg)] - sum_m pi_m E_{P_m}[H(c,bg)]`` (Eqs. 8 and 15), removes exactly what
  the positives contribute to ``E_x[H(c,bg)]`` over the N sampled RoIs::

      pi_m = (sum_{P_m} H(c,bg) + sum_{U_m+} H(c,bg)) / (N mean_{P_m} H(c,bg))
           = rho_m + (share_m - rho_m) mean_{U_m+} H(c,bg) / mean_{P_m} H(c,bg)

  with ``rho_m = |P_m| / N``, ``share_m = (|P_m| + |U_m+|) / N`` and ``U_m+`` the
  unlabeled RoIs the assigner gives to the pseudo-complete (or complete) cells of class
  ``m``. When labeled and unlabeled cells score alike (SCAR) it equals the share.

:func:`recommend` chooses the estimator to train with.
"""
import math
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from mmdet_pu.evaluation.matching import box_iou

#: A detection overlapping a labeled cell at least this much is that cell (docs/method.md#matching).
SAME_CELL_IOU = 0.5
#: RoI-stage estimates further apart than this point at an unreliable detector.
DISAGREEMENT = 0.05


def recommend(held_out: bool, risk_matched_prior: Optional[float],
              bbe_prior: Optional[float]) -> Tuple[str, str]:
    """The RoI-stage estimator to train with, and why.

    The risk-matched prior whenever there is one. Otherwise a share: BBE on held-out
    images; the label frequency on the training images, where the detector has fitted
    the labeled cells' scores so that P no longer scores like the positives in U (BBE
    falls low), and wherever BBE has no usable estimate.

    Args:
        held_out: the images were not trained on (the validation split).
        risk_matched_prior: the risk-matched estimate, None if it has none (a head
            without a background logit, no labeled RoI, or a prior >= 1).
        bbe_prior: BBE's estimate, None if it has none or its best bin is the whole
            score range (the scores do not separate P from U).
    """
    if risk_matched_prior is not None:
        reason = ('the prior at which the PU risk subtracts what the positives '
                  'contribute to E_x[H(c,bg)] for this detector; the shares (label '
                  'frequency, BBE) over-correct when it scores its labeled cells higher '
                  'than the unlabeled ones')
        if held_out:
            reason += ('; estimated on held-out images, where the labeled cells are not '
                       'fitted as in training: --split train is its split')
        return 'risk_matched', reason
    if bbe_prior is None:
        return 'label_frequency', ('BBE has no usable estimate (no labeled or unlabeled '
                                   'RoIs, or scores that do not separate them)')
    if held_out:
        return 'bbe', ('BBE on held-out images followed the oracle share most closely; the '
                       'label frequency counts every false positive as a cell')
    return 'label_frequency', ('on the training images the detector has fitted the '
                               'labeled cells\' scores, which biases BBE low')


class BBEResult(NamedTuple):
    """Outcome of :func:`best_bin_estimate`.

    Attributes:
        alpha: estimated share of positives in U.
        threshold: ``z*``, the lower edge of the chosen top bin.
        q_p: share of P scoring ``>= z*``.
        q_u: share of U scoring ``>= z*``.
        upper_bound: the minimised upper confidence bound of ``alpha``.
        n_p: number of P scores.
        n_u: number of U scores.
    """
    alpha: float
    threshold: float
    q_p: float
    q_u: float
    upper_bound: float
    n_p: int
    n_u: int


def best_bin_estimate(p_scores, u_scores, delta: float = 0.1,
                      gamma: float = 0.01) -> BBEResult:
    """BBE (Garg et al. 2021, Algorithm 1): the share of positives in U.

    Args:
        p_scores: scores of the labeled positives P (higher = more positive).
        u_scores: scores of the unlabeled samples U.
        delta, gamma: the confidence parameters of the bound, in (0, 1).

    Raises:
        ValueError: when P or U is empty, or a score is not finite.
    """
    p = np.sort(np.asarray(p_scores, dtype=np.float64).reshape(-1))
    u = np.sort(np.asarray(u_scores, dtype=np.float64).reshape(-1))
    if not len(p) or not len(u):
        raise ValueError('best-bin estimation needs labeled-positive (P) and unlabeled '
                         f'(U) scores, got n_p={len(p)}, n_u={len(u)}')
    if not (np.isfinite(p).all() and np.isfinite(u).all()):
        raise ValueError('best-bin estimation: scores must be finite')
    if not (0 < delta < 1 and 0 < gamma < 1):
        raise ValueError(f'best-bin estimation: expected 0 < delta, gamma < 1, got '
                         f'delta={delta}, gamma={gamma}')
    thresholds = np.unique(np.concatenate([p, u]))
    q_p = (len(p) - np.searchsorted(p, thresholds, side='left')) / len(p)
    q_u = (len(u) - np.searchsorted(u, thresholds, side='left')) / len(u)
    slack = (1 + gamma) * (np.sqrt(np.log(4 / delta) / (2 * len(u)))
                           + np.sqrt(np.log(4 / delta) / (2 * len(p))))
    bound = np.divide(q_u + slack, q_p, out=np.full(q_p.shape, np.inf), where=q_p > 0)
    best = int(np.argmin(bound))  # ties: the lowest threshold, the largest bin
    return BBEResult(alpha=float(q_u[best] / q_p[best]), threshold=float(thresholds[best]),
                     q_p=float(q_p[best]), q_u=float(q_u[best]),
                     upper_bound=float(bound[best]), n_p=len(p), n_u=len(u))


def prior_from_mixture(alpha: float, n_p: int, n_u: int, n: Optional[int] = None) -> float:
    """pi over U ∪ P when a share ``alpha`` of the ``n_u`` unlabeled samples is positive.

    ``(n_p + alpha n_u) / n`` with ``n = n_p + n_u`` by default; with several classes
    ``n`` also counts the labeled positives of the other classes.
    """
    n = n_p + n_u if n is None else n
    if n <= 0 or n < n_p + n_u:
        raise ValueError(f'prior over U ∪ P: expected n >= n_p + n_u > 0, got n={n}, '
                         f'n_p={n_p}, n_u={n_u}')
    return (n_p + alpha * n_u) / n


def new_detections(labeled_bboxes, det_bboxes, iou_thr: float = SAME_CELL_IOU) -> np.ndarray:
    """(N,) bool: True for each of the N ``det_bboxes`` that is none of the labeled cells
    (IoU below ``iou_thr`` with every one of ``labeled_bboxes``, of any class)."""
    labeled_bboxes = np.asarray(labeled_bboxes, dtype=np.float64).reshape(-1, 4)
    det_bboxes = np.asarray(det_bboxes, dtype=np.float64).reshape(-1, 4)
    if not len(labeled_bboxes) or not len(det_bboxes):
        return np.ones(len(det_bboxes), dtype=bool)
    return box_iou(det_bboxes, labeled_bboxes).max(axis=1) < iou_thr


def pseudo_complete(labeled_bboxes, labeled_labels, det_bboxes, det_labels,
                    iou_thr: float = SAME_CELL_IOU):
    """The labeled cells plus the detections that are none of them.

    A detection overlapping a labeled cell (of any class) at IoU ``>= iou_thr`` is that
    cell and is dropped; the labeled cell keeps its class. The caller selects the
    detections (score threshold).

    Returns:
        tuple: ``(bboxes (M, 4), labels (M,), added (M,) bool)``, labeled cells first.
    """
    labeled_bboxes = np.asarray(labeled_bboxes, dtype=np.float64).reshape(-1, 4)
    det_bboxes = np.asarray(det_bboxes, dtype=np.float64).reshape(-1, 4)
    labeled_labels = np.asarray(labeled_labels, dtype=np.int64).reshape(-1)
    det_labels = np.asarray(det_labels, dtype=np.int64).reshape(-1)
    if len(labeled_bboxes) != len(labeled_labels) or len(det_bboxes) != len(det_labels):
        raise ValueError(f'pseudo-complete cells: {len(labeled_bboxes)} labeled boxes / '
                         f'{len(labeled_labels)} labels, {len(det_bboxes)} detections / '
                         f'{len(det_labels)} labels; expected as many labels as boxes')
    new = new_detections(labeled_bboxes, det_bboxes, iou_thr)
    bboxes = np.concatenate([labeled_bboxes, det_bboxes[new]])
    labels = np.concatenate([labeled_labels, det_labels[new]])
    added = np.concatenate([np.zeros(len(labeled_bboxes), bool), np.ones(new.sum(), bool)])
    return bboxes, labels, added


class ImageSamples(NamedTuple):
    """What the two stages sample on one image, as training draws them.

    RoI stage (K sampled RoIs): ``roi_labels`` the class of the labeled cell a RoI is
    assigned to (P), -1 for U; ``roi_is_gt`` the RoI is a labeled cell's own box (added
    to the proposals); ``roi_scores`` (K, C) class probabilities of the RoI head;
    ``roi_bg_ce`` (K,) its background cross entropy H(c, bg), None for a head without a
    background logit; ``roi_pseudo`` / ``roi_oracle`` the class the assigner gives with
    the pseudo-complete / complete cells, -1 for none. RPN stage (A sampled anchors):
    ``rpn_labeled``, ``rpn_pseudo``, ``rpn_oracle`` whether the anchor is positive with
    the labeled / pseudo-complete / complete cells. Cells per class (C,):
    ``labeled_cells``, ``pseudo_cells``, ``complete_cells``. The ``*_oracle`` and
    ``complete_cells`` fields are None without complete labels.
    """
    roi_labels: np.ndarray
    roi_is_gt: np.ndarray
    roi_scores: np.ndarray
    roi_bg_ce: Optional[np.ndarray]
    roi_pseudo: np.ndarray
    roi_oracle: Optional[np.ndarray]
    rpn_labeled: np.ndarray
    rpn_pseudo: np.ndarray
    rpn_oracle: Optional[np.ndarray]
    labeled_cells: np.ndarray
    pseudo_cells: np.ndarray
    complete_cells: Optional[np.ndarray]


def _concat(images: Sequence[ImageSamples], field: str):
    values = [getattr(image, field) for image in images]
    if any(value is None for value in values):
        return None
    if field.endswith('_cells'):
        return np.sum(values, axis=0)
    return np.concatenate(values)


def _share(flags: np.ndarray) -> float:
    return float(np.mean(flags)) if len(flags) else float('nan')


def _ratio(num, den) -> List[Optional[float]]:
    return [float(n / d) if d else None for n, d in zip(num, den)]


def risk_matched_priors(bg_ce: np.ndarray, labels: np.ndarray, assigned: np.ndarray,
                        num_classes: int, estimator: str = 'union') -> List[dict]:
    """Per class the risk-matched prior (module docstring) of the N sampled RoIs.

    With the naive approximation (the loss's ``estimator='unlabeled'``, E_x[H(c,bg)]
    over U only) the positives' part of that mean is ``sum_{U_m+} H(c,bg) / |U|``, and
    ``pi_m = sum_{U_m+} H(c,bg) / (|U| mean_{P_m} H(c,bg))``.

    Args:
        bg_ce: (N,) the detector's H(c, bg) of each RoI.
        labels: (N,) class of the labeled cell of a RoI (P), -1 for unlabeled (U).
        assigned: (N,) class the assigner gives a RoI with the (pseudo-)complete cells,
            -1 for none; an unlabeled RoI of class m is in U_m+.
        num_classes: C.
        estimator: the loss's estimate of E_x[H(c,bg)], ``'union'`` (U ∪ P) or
            ``'unlabeled'`` (U).

    Returns:
        list[dict]: per class ``prior``, ``rho`` (labeled share), ``share`` (share of
        the class), ``h_p`` and ``h_u`` (mean H(c, bg) over P_m and U_m+, None when
        U_m+ is empty); or ``prior`` None and ``error``.
    """
    union = estimator == 'union'
    n = len(labels) if union else int((labels < 0).sum())
    found = []
    for m in range(num_classes):
        labeled = labels == m
        unlabeled = (labels < 0) & (assigned == m)
        if not labeled.any():
            found.append(dict(prior=None, error=f'no labeled RoI of class {m} (n_p=0)'))
            continue
        h_p = float(bg_ce[labeled].mean())
        positives = float(bg_ce[unlabeled].sum()) + (float(bg_ce[labeled].sum()) if union
                                                     else 0.0)
        prior = positives / (n * h_p) if h_p > 0 and n else math.inf
        if not prior < 1:
            found.append(dict(prior=None, error=f'class {m}: the labeled RoIs score as '
                              f'background (mean H(c,bg) {h_p:.3g}), prior {prior:.3g} >= 1'))
            continue
        found.append(dict(prior=prior, rho=float(labeled.mean()),
                          share=float((labeled | unlabeled).mean()), h_p=h_p,
                          h_u=float(bg_ce[unlabeled].mean()) if unlabeled.any() else None))
    return found


def cell_scores(scores: np.ndarray, softmax: bool) -> np.ndarray:
    """(K,) the probability that a sample is a cell of any class, from its (K, C) class
    probabilities: ``1 - p_bg`` (their sum) for a softmax head with a background logit,
    ``1 - prod_m (1 - p_m)`` for independent (sigmoid) class scores."""
    if softmax:
        return np.clip(scores.sum(axis=1), 0.0, 1.0)
    return 1.0 - np.prod(1.0 - scores, axis=1)


def split_cell_bbe(labels: np.ndarray, is_gt: np.ndarray, scores: np.ndarray,
                   softmax: bool = True, delta: float = 0.1,
                   gamma: float = 0.01) -> List[dict]:
    """Per class the RoI stage's BBE share (module docstring): BBE of the cells of any
    class in U on the cell score (:func:`cell_scores`), split between the classes by
    the detector's probability mass of each over U.

    Args:
        labels: (K,) class of the labeled cell of a sampled RoI (P), -1 for U.
        is_gt: (K,) the RoI is a labeled cell's own box; left out of P for ``alpha``
            unless no proposal matched a labeled cell.
        scores: (K, C) class probabilities.
        softmax: the probabilities are a softmax's with a background logit.
        delta, gamma: BBE's confidence parameters.

    Returns:
        list[dict]: per class ``prior``, ``alpha`` (the class's share of U,
        ``w_m alpha``), ``split`` (``w_m``) and the cell-level BBE's ``z``, ``q_p``,
        ``q_u``, ``n_p`` (the P scores used), ``upper_bound`` and ``p_includes_gt``;
        ``prior`` None and ``error`` for a class without a labeled RoI, or for all when
        BBE has no estimate.
    """
    num_classes = scores.shape[1]
    unlabeled = labels < 0
    positives = labels >= 0
    p_includes_gt = not (positives & ~is_gt).any()  # no proposal matched a cell
    if not p_includes_gt:
        positives = positives & ~is_gt
    cells = cell_scores(scores, softmax)
    try:
        result = best_bin_estimate(cells[positives], cells[unlabeled], delta=delta,
                                   gamma=gamma)
    except ValueError as error:
        return [dict(prior=None, error=str(error)) for _ in range(num_classes)]
    mass = scores[unlabeled].sum(axis=0)
    split = mass / mass.sum() if mass.sum() > 0 else np.full(num_classes, 1 / num_classes)
    found = []
    for m in range(num_classes):
        n_p = int((labels == m).sum())
        if not n_p:
            found.append(dict(prior=None, error=f'no labeled RoI of class {m} (n_p=0)'))
            continue
        alpha = float(split[m] * result.alpha)
        found.append(dict(prior=prior_from_mixture(alpha, n_p, int(unlabeled.sum()),
                                                   n=len(labels)),
                          alpha=alpha, split=float(split[m]), z=result.threshold,
                          q_p=result.q_p, q_u=result.q_u, n_p=result.n_p,
                          upper_bound=result.upper_bound, p_includes_gt=p_includes_gt))
    return found


def estimate_priors(images: Sequence[ImageSamples], num_classes: int,
                    delta: float = 0.1, gamma: float = 0.01,
                    estimator: str = 'union') -> Dict[str, dict]:
    """The estimators (and the oracle, with complete labels) for both stages.

    ``estimator`` is the RoI loss's estimate of E_x[H(c,bg)] (``'union'`` or the naive
    ``'unlabeled'``), which the risk-matched prior depends on.

    Returns:
        dict: ``{'roi': {...}, 'rpn': {...}}``. Per stage the sample counts ``n``,
        ``n_p`` (labeled positives, per class for the RoIs) and ``n_u``, and one dict per
        estimator: ``label_frequency`` and ``oracle`` (``priors`` per class for the
        RoIs, ``prior`` for the RPN, and the label frequencies ``c`` per class and
        ``c_all``), ``bbe`` (RoIs only: per class ``prior``, ``alpha``, ``z``, ``n_p``
        (the P scores used), ``q_p``, ``q_u``, ``upper_bound``, ``p_includes_gt``, or
        ``prior`` None and ``error``), ``risk_matched`` and ``risk_matched_oracle``
        (RoIs only, :func:`risk_matched_priors` with the pseudo-complete / complete
        cells; None for a head without a background logit).
        ``oracle`` and ``risk_matched_oracle`` are None without complete labels.
    """
    if not images:
        raise ValueError('prior estimation: no images')
    get = {field: _concat(images, field) for field in ImageSamples._fields}
    labels, is_gt, scores = get['roi_labels'], get['roi_is_gt'], get['roi_scores']
    if scores.shape[1:] != (num_classes, ):
        raise ValueError(f'RoI scores have shape {scores.shape}, expected (K, '
                         f'{num_classes}) for {num_classes} classes')
    unlabeled = labels < 0
    n_p = [int((labels == m).sum()) for m in range(num_classes)]

    def roi_shares(assigned, cells):
        return dict(priors=[_share(assigned == m) for m in range(num_classes)],
                    c=_ratio(get['labeled_cells'], cells),
                    c_all=_ratio([get['labeled_cells'].sum()], [cells.sum()])[0])

    bbe = split_cell_bbe(labels, is_gt, scores, softmax=get['roi_bg_ce'] is not None,
                         delta=delta, gamma=gamma)

    def risk_matched(assigned):
        if get['roi_bg_ce'] is None or assigned is None:
            return None
        return risk_matched_priors(get['roi_bg_ce'], labels, assigned, num_classes,
                                   estimator)

    roi = dict(n=len(labels), n_p=n_p, n_u=int(unlabeled.sum()),
               labeled_cells=get['labeled_cells'].tolist(),
               pseudo_complete_cells=get['pseudo_cells'].tolist(),
               label_frequency=roi_shares(get['roi_pseudo'], get['pseudo_cells']),
               bbe=bbe, risk_matched=risk_matched(get['roi_pseudo']), oracle=None,
               risk_matched_oracle=risk_matched(get['roi_oracle']))
    rpn_labeled = get['rpn_labeled']
    all_labeled = get['labeled_cells'].sum()
    rpn = dict(n=len(rpn_labeled), n_p=int(rpn_labeled.sum()),
               n_u=int((~rpn_labeled).sum()),
               label_frequency=dict(prior=_share(get['rpn_pseudo']),
                                    c_all=_ratio([all_labeled],
                                                 [get['pseudo_cells'].sum()])[0]),
               oracle=None)
    if get['complete_cells'] is not None:
        roi['complete_cells'] = get['complete_cells'].tolist()
        roi['oracle'] = roi_shares(get['roi_oracle'], get['complete_cells'])
        rpn['oracle'] = dict(prior=_share(get['rpn_oracle']),
                             c_all=_ratio([all_labeled], [get['complete_cells'].sum()])[0])
    return dict(roi=roi, rpn=rpn)
