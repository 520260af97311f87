"""Statistics of the paper's comparison tables (Section 3.2).

Methods are compared with a paired Student's t-test (over folds, runs or test images) and
the p-values of one table are corrected for multiple comparisons with the
Benjamini-Hochberg procedure; stars mark ``p < 0.05`` (*) and ``p < 0.01`` (**).
"""
from typing import Tuple

import numpy as np
from scipy import stats


def mean_std(values, ddof: int = 1, undefined=float('nan')) -> Tuple[float, float]:
    """Mean and standard deviation of the defined values (not NaN, not None).

    ``ddof=1`` gives the sample standard deviation (the spread across folds, seeds or
    images as an estimate of the population's): it is undefined for a single value (a
    single run has no spread to report, which is not a spread of 0), as is the mean of
    no value. An undefined result is ``undefined``: NaN, or e.g. None for JSON.
    """
    values = np.asarray(values, dtype=np.float64)  # None -> NaN
    values = values[~np.isnan(values)]
    mean = float(values.mean()) if values.size else undefined
    std = float(values.std(ddof=ddof)) if values.size > ddof else undefined
    return mean, std


def paired_ttest(a, b) -> Tuple[float, float]:
    """Two-sided paired Student's t-test of ``a`` against ``b``.

    With differences ``d_i = a_i - b_i`` over the ``n`` pairs where both are defined,
    ``t = mean(d) / (std(d, ddof=1) / sqrt(n))`` with ``n - 1`` degrees of freedom
    (``scipy.stats.ttest_rel``). Pairs with a NaN are dropped. All differences zero gives
    ``(0, 1)`` (no evidence of a difference); fewer than two pairs gives ``(nan, nan)``.

    Returns:
        ``(t, p)``.
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f'paired t-test needs equally many values, got {a.size} and '
                         f'{b.size}')
    defined = ~(np.isnan(a) | np.isnan(b))
    a, b = a[defined], b[defined]
    if a.size < 2:
        return float('nan'), float('nan')
    if np.all(a == b):
        return 0.0, 1.0
    result = stats.ttest_rel(a, b)
    return float(result.statistic), float(result.pvalue)


def benjamini_hochberg(pvalues) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false discovery rate).

    For the ``m`` defined p-values sorted ascending, ``p_(1) <= ... <= p_(m)``,

        q_(i) = min_{k >= i} min(1, m / k * p_(k)),

    returned in the input order; NaN entries stay NaN and do not count in ``m``. A
    hypothesis is rejected at FDR level alpha iff its ``q <= alpha``.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    adjusted = np.full(p.shape, np.nan)
    defined = np.flatnonzero(~np.isnan(p.reshape(-1)))
    if defined.size == 0:
        return adjusted
    flat = p.reshape(-1)[defined]
    order = np.argsort(flat, kind='stable')
    m = flat.size
    scaled = flat[order] * m / np.arange(1, m + 1)
    q_sorted = np.minimum.accumulate(scaled[::-1])[::-1].clip(max=1.0)
    q = np.empty(m)
    q[order] = q_sorted
    adjusted.reshape(-1)[defined] = q
    return adjusted


def significance_stars(p: float) -> str:
    """``'**'`` for p < 0.01, ``'*'`` for p < 0.05, ``'n.s.'`` otherwise, ``''`` for NaN
    (the paper's notation)."""
    if p is None or np.isnan(p):
        return ''
    if p < 0.01:
        return '**'
    if p < 0.05:
        return '*'
    return 'n.s.'
