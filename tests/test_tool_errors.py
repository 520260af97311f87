"""The tools report ordinary user errors (bad options, configs, paths) as
``<tool>: error: <message>`` with exit status 2 and no traceback
(:func:`cellio.cli.report_user_errors` and argparse ``type=`` functions); a bug keeps
its traceback."""
import argparse

import pytest

from cellio.cli import RUN_ERRORS, report_user_errors, score_thr_or_val
from tests._cli import run_script
from tests._data import REPO

PU_CONFIG = str(REPO / 'configs' / 'pu' / 'mitos14_vgg16_keep1_pu.py')
CE_CONFIG = str(REPO / 'configs' / 'baselines' / 'mitos14_r50_keep1_ce.py')


def refused(script, *args):
    """The one line ``tools/<script> ARGS`` prints on stderr when it refuses them."""
    proc = run_script(f'tools/{script}', *args)
    assert proc.returncode == 2 and 'Traceback' not in proc.stderr, proc.stderr[-3000:]
    return proc.stderr.splitlines()[-1]


def test_run_errors_are_one_line_and_bugs_keep_their_traceback(capsys):
    def missing_key(argv):
        raise KeyError("config key 'model.x' does not exist")

    assert report_user_errors(missing_key, errors=RUN_ERRORS) == 2
    assert capsys.readouterr().err.endswith(
        "error: config key 'model.x' does not exist\n")  # not the KeyError's repr
    with pytest.raises(KeyError):
        report_user_errors(missing_key)  # a KeyError elsewhere is a bug


def test_score_threshold_is_a_score_or_val():
    assert score_thr_or_val('val') == 'val' and score_thr_or_val('0.35') == 0.35
    for text in ('0,5', '1.5'):
        with pytest.raises(argparse.ArgumentTypeError, match=f'got {text!r}'):
            score_thr_or_val(text)


def test_test_checks_its_options_before_reading_the_config(tmp_path):
    missing = tmp_path / 'missing.py'  # never read: the options are refused first
    assert refused('test.py', missing, 'x.pth', '--score-thr', '0,5') == (
        "test.py: error: argument --score-thr: expected a score in [0, 1] or 'val', "
        "got '0,5'")
    assert refused('test.py', missing, 'x.pth', '--out', 'dets.json') == (
        'test.py: error: --out dets.json: expected a .pkl/.pickle file')


def test_sweep_prior_reports_a_bad_range_and_jobs():
    assert refused('sweep_prior.py', PU_CONFIG, '--range', '0.05', '0.02', '0.005',
                   '--dry-run') == ('sweep_prior.py: error: --range 0.05 0.02 0.005: '
                                    'expected STEP > 0 and STOP >= START')
    assert refused('sweep_prior.py', PU_CONFIG, '--values', '0.1', '--jobs', '0') == (
        'sweep_prior.py: error: --jobs must be >= 1, got 0')


def test_estimate_prior_refuses_a_config_without_pu_loss(tmp_path):
    message = refused('estimate_prior.py', CE_CONFIG, tmp_path / 'x.pth')
    assert message.startswith(f'estimate_prior.py: error: {CE_CONFIG}: '
                              "model.roi_head.bbox_head.loss_cls is 'CrossEntropyLoss'; "
                              'expected a PULoss')


def test_compare_reports_a_missing_work_dir(tmp_path):
    missing = str(tmp_path / 'pu_fold*')
    assert refused('compare.py', missing, '--names', 'pu', '--ref', 'pu') == (
        f'compare.py: error: {missing!r} matches no work dir or file')


def test_fit_prior_factors_are_positive_numbers(tmp_path):
    assert refused('fit_prior.py', PU_CONFIG, '--factors', 'abc', '--work-dir',
                   tmp_path) == ("fit_prior.py: error: argument --factors: expected a "
                                 "number, got 'abc'")


def test_test_time_flips_need_a_tiled_test_loop(tmp_path):
    nucls = str(REPO / 'configs' / 'pu' / 'nucls_mpu.py')  # evaluated per field of view
    assert refused('test.py', nucls, tmp_path / 'x.pth', '--tta') == (
        "test.py: error: --tta: expected a tiled test loop (test_cfg type TiledTestLoop or "
        f"a subclass), {nucls} has 'TestLoop'")
