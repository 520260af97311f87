"""Choosing the prior from validation runs: recall, Lee & Liu's criterion, the band."""
import argparse
import math

import numpy as np
import pytest

from mmdet_pu.prior import selection as prior_selection


def test_choice_by_average_recall_ties_to_smaller_prior():
    rows = [dict(prior=0.3, avg_recall=0.8), dict(prior=0.1, avg_recall=0.8),
            dict(prior=0.2, avg_recall=0.7), dict(prior=0.05, avg_recall=math.nan)]
    assert prior_selection.choose(rows)['prior'] == 0.1


def _counts(tp, detections, num_gt, num_images=10):
    return dict(tp=np.array(tp), detections=np.array(detections), num_gt=np.array(num_gt),
                num_images=num_images)


def test_pu_criterion_sees_the_false_positives_that_recall_cannot():
    # a bolder detector finds one more labeled cell but doubles its detections
    rows = [dict(prior=0.4, run_dir='b', counts=_counts([20], [400], [20])),
            dict(prior=0.25, run_dir='a', counts=_counts([19], [200], [20]))]
    by_recall = [dict(r, avg_recall=r['counts']['tp'][0] / 20) for r in rows]
    assert prior_selection.choose(by_recall)['prior'] == 0.4
    chosen = prior_selection.choose_by_pu_criterion(rows)
    # r^2 / rate: 0.95^2 / 20 = 0.0451 against 1 / 40 = 0.025
    assert chosen['prior'] == 0.25
    assert rows[1]['pu_criterion'] == 1.0
    assert rows[0]['pu_criterion'] == pytest.approx(0.025 / 0.045125)
    # classes count equally: each is divided by its best value, then averaged
    two = [dict(prior=0.1, run_dir='a', counts=_counts([10, 1], [100, 10], [10, 10])),
           dict(prior=0.2, run_dir='b', counts=_counts([9, 2], [100, 10], [10, 10]))]
    # (0.81 + 1) / 2 against (1 + 0.25) / 2
    assert prior_selection.choose_by_pu_criterion(two)['prior'] == 0.2
    # equal criteria: the smaller prior
    tie = [dict(prior=p, run_dir=str(p), counts=_counts([5], [50], [10])) for p in (0.3, 0.2)]
    assert prior_selection.choose_by_pu_criterion(tie)['prior'] == 0.2
    with pytest.raises(ValueError, match='same validation labels'):
        prior_selection.choose_by_pu_criterion(
            [rows[0], dict(rows[1], counts=_counts([5], [9], [21]))])
    with pytest.raises(RuntimeError, match='no run detects a labeled'):
        prior_selection.choose_by_pu_criterion(
            [dict(prior=0.1, run_dir='a', counts=_counts([0], [5], [20]))])


def test_recall_band_holds_the_values_validation_cannot_tell_apart():
    rows = [dict(prior=0.1, avg_recall=0.70), dict(prior=0.2, avg_recall=0.96),
            dict(prior=0.3, avg_recall=0.98), dict(prior=0.4, avg_recall=0.975),
            dict(prior=0.05, avg_recall=math.nan)]
    band = prior_selection.recall_band(rows, 0.02)
    assert band['values'] == [0.2, 0.3, 0.4]
    assert (band['low'], band['high'], band['recall']) == (0.2, 0.4, 0.98)
    assert prior_selection.recall_band(rows, 0)['values'] == [0.3]
    empty = prior_selection.recall_band([dict(prior=0.1, avg_recall=math.nan)], 0.02)
    assert empty['values'] == [] and empty['low'] is None and empty['recall'] is None


def test_band_and_key_arguments():
    parser = argparse.ArgumentParser()
    prior_selection.add_selection_arguments(parser)
    args = parser.parse_args(['--band', '0.05', '--key', 'a.b', '--key', 'c'])
    assert (args.band, args.keys) == (0.05, ['a.b', 'c'])
    assert parser.parse_args([]).band == 0.02 and parser.parse_args([]).keys is None
    for bad in ('-0.1', '1'):
        with pytest.raises(SystemExit):
            parser.parse_args(['--band', bad])
