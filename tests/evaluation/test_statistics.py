"""Paired t-test, Benjamini-Hochberg and stars against values computed by hand."""
import math

import numpy as np
import pytest
from scipy import stats

from mmdet_pu.evaluation.statistics import (benjamini_hochberg, mean_std, paired_ttest,
                                            significance_stars)


def test_paired_ttest_by_hand():
    # d = (2, 3, 1): mean 2, sd 1, t = 2 / (1 / sqrt(3)) = 2 sqrt(3), 2 degrees of freedom.
    # With 2 dof the two-sided p-value has the closed form 1 - t / sqrt(t^2 + 2).
    t, p = paired_ttest([3, 5, 4], [1, 2, 3])
    assert t == pytest.approx(2 * math.sqrt(3))
    assert p == pytest.approx(1 - math.sqrt(12 / 14))
    t_rev, p_rev = paired_ttest([1, 2, 3], [3, 5, 4])
    assert t_rev == pytest.approx(-t) and p_rev == pytest.approx(p)


def test_paired_ttest_drops_undefined_pairs_and_degenerate_cases():
    t, p = paired_ttest([3, 5, np.nan, 4], [1, 2, 7, 3])
    assert t == pytest.approx(2 * math.sqrt(3))
    assert paired_ttest([0.5, 0.6], [0.5, 0.6]) == (0.0, 1.0)
    assert all(math.isnan(v) for v in paired_ttest([1.0], [2.0]))
    with pytest.raises(ValueError, match='equally many'):
        paired_ttest([1, 2], [1, 2, 3])


def test_benjamini_hochberg_by_hand():
    # sorted p: .01 .03 .04 .20 (m = 4); m/k p: .04 .06 .0533 .20;
    # running minimum from the largest: .04 .0533 .0533 .20
    q = benjamini_hochberg([0.01, 0.04, 0.03, 0.20])
    np.testing.assert_allclose(q, [0.04, 0.16 / 3, 0.16 / 3, 0.20])
    np.testing.assert_allclose(q, stats.false_discovery_control([0.01, 0.04, 0.03, 0.20]))


def test_benjamini_hochberg_clips_and_ignores_nan():
    q = benjamini_hochberg([0.9, np.nan, 0.8])
    assert math.isnan(q[1])
    np.testing.assert_allclose(q[[0, 2]], [0.9, 0.9])  # m = 2, not 3
    assert benjamini_hochberg([0.6, 0.7, 0.9]).max() <= 1
    rng = np.random.default_rng(0)
    p = rng.uniform(size=20) ** 3
    np.testing.assert_allclose(benjamini_hochberg(p), stats.false_discovery_control(p))


def test_stars_and_mean_std():
    assert [significance_stars(p) for p in (0.009, 0.01, 0.049, 0.05, float('nan'))] == \
        ['**', '*', '*', 'n.s.', '']
    mean, std = mean_std([1.0, 2.0, np.nan, 3.0])
    assert mean == 2.0 and std == 1.0  # sample std, NaN left out
    assert math.isnan(mean_std([1.0])[1])


def test_mean_std_of_one_or_no_value_is_undefined_not_zero():
    """A single seed has no spread: its std is undefined (NaN, or the caller's None),
    never 0.0; None values count as undefined like NaN."""
    assert mean_std([0.9], undefined=None) == (0.9, None)
    assert mean_std([None, 0.5, np.nan, 0.7], undefined=None) == pytest.approx(
        (0.6, np.std([0.5, 0.7], ddof=1)))
    assert mean_std([None], undefined=None) == (None, None)
    assert mean_std([], undefined=None) == (None, None)
