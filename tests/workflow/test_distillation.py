"""The prior fit's distilled detector (mmdet_pu.workflow.distillation, ``final=
'distilled'``), on a fit that trains nothing: every training, the fused detector and
the pseudo-labels are faked, as the other fake-run tests of the fit fake them, so that
the options, the files and the report of the fit are checked value by value."""
import json
import os
import re
import shutil

import pytest
from mmengine.config import Config

from cellio.records import write_record
from mmdet_pu.evaluation.validation_thr import validation_dump, validation_score_thr
from mmdet_pu.prior.candidates import scale_odds
from mmdet_pu.prior.selection import COLUMNS
from mmdet_pu.workflow import prior_fit, self_training
from mmdet_pu.workflow.distillation import distillation_cut, student_floor_option
from mmdet_pu.workflow.fit_choice import fusion_weights
from mmdet_pu.workflow.fit_options import load_fit_config
from mmdet_pu.workflow.fit_report import format_summary, returned_training
from mmdet_pu.workflow.fused_ensemble import (dumped_config, ensemble_config, file_stamps,
                                              score_floor_key)
from mmdet_pu.workflow.runs import Run
from tests._data import REPO

CONFIG = str(REPO / 'configs/synthetic/synthetic_keep1_pu.py')
ROI_KEY, RPN_KEY = 'model.roi_head.bbox_head.loss_cls.prior', 'model.rpn_head.loss_cls.prior'
#: The estimate the fake fit reads (``estimate.json``): the RoI head's share by BBE,
#: the RPN's by the label frequency, as a Faster R-CNN report holds them.
ESTIMATE = dict(
    classes=['cell'], cfg_options=[], recommended=dict(roi=0.2, rpn=0.01),
    trained_with=dict(roi=0.25, rpn=0.006),
    stages=dict(roi=dict(key=ROI_KEY, estimates=dict(
                    bbe=dict(value=0.2, per_class=dict(cell=dict(prior=0.2))))),
                rpn=dict(key=RPN_KEY, estimates=dict(label_frequency=dict(value=0.01)))))
#: Per fake detector: the labeled validation cells it matches (of 8, at 10 detections
#: per image: x2 has the best criterion), the threshold its validation selected and
#: that of the point estimate (the pseudo-labels' cut).
VALIDATION = {'provisional': (3, 0.4, 0.6), 'x0.7': (4, 0.4, 0.6), 'x2': (6, 0.4, 0.6),
              'self_trained': (5, 0.4, 0.6), 'fused': (7, 0.35, 0.7),
              'distilled': (7, 0.45, 0.65)}
#: Per fake detector: the pseudo-labels it gives the round (1 unless set here).
PSEUDO_COUNTS = {}
#: The options that give the synthetic config's RoI head box-fit negatives.
BOX_FIT = ['model.roi_head.bbox_head.type=BoxFitShared2FCBBoxHead',
           'model.train_cfg.rcnn.sampler.type=OverlapRandomSampler']
#: The options that make both assigners ignore the uncertain band.
IGNORING = ['model.train_cfg.rpn.assigner.ignore_iof_thr=0.5',
            'model.train_cfg.rcnn.assigner.ignore_iof_thr=0.5']


def write_config(cfg: Config, path: str) -> None:
    """``cfg`` as a config file, as ``Config.dump`` writes it, less its slow formatting."""
    with open(path, 'w') as f:
        f.write(''.join(f'{key} = {value!r}\n' for key, value in cfg.to_dict().items()))


def leave_outputs(run: Run, checkpoint_name: str = 'iter_2.pth') -> None:
    """What a finished run leaves that the fit reads: a checkpoint of its own, its
    ``last_checkpoint``, validation and test dumps (:data:`VALIDATION`) and
    ``run.json``."""
    checkpoint = os.path.join(run.work_dir, checkpoint_name)
    with open(checkpoint, 'wb') as f:
        f.write(run.name.encode())
    with open(os.path.join(run.work_dir, 'last_checkpoint'), 'w') as f:
        f.write(checkpoint)
    tp, thr, point = VALIDATION[run.name]
    metrics = {f'cell/{name}': 0.1 * tp for name in (*COLUMNS, 'ap')}
    metrics.update({'cell/cell/tp': tp, 'cell/cell/fp': 20 - tp, 'cell/cell/fn': 8 - tp,
                    'cell/pu_score_thr': thr})
    for stage in ('val', 'test'):
        dump = os.path.join(run.work_dir, 'cell_metrics', f'{stage}_per_image.json')
        os.makedirs(os.path.dirname(dump), exist_ok=True)
        with open(dump, 'w') as f:
            json.dump(dict(prefix='cell', classes=['cell'], images=[{}, {}],
                           metrics=metrics, score_thr_selection=dict(
                               chosen_point=point, confidence=0.95)), f)
    write_record(run.record_file, dict(config=run.config, options=run.options,
                                       trained=True))


@pytest.fixture
def fake_fit(tmp_path, monkeypatch):
    """``(fit, work dir, calls)``: ``fit(**kwargs)`` runs ``fit_prior`` on the synthetic
    config in the work dir, its estimate given, every run "trained" by leaving its
    outputs (and the config it ran with, as mmengine dumps it) instead of training,
    the fused detector made of files alone, and the pseudo-labels written with no
    detector; ``calls['trained']`` lists the runs trained, ``calls['pseudo']`` the
    pseudo-label files written (their source, options and cut)."""
    calls = dict(trained=[], pseudo=[])

    def run_all(runs, jobs=1, echo=print):
        for run in runs:
            run.check_record()
            if run.finished():
                continue
            calls['trained'].append(run)
            os.makedirs(run.work_dir, exist_ok=True)
            cfg = load_fit_config(run.config, run.options)
            cfg.work_dir = run.work_dir
            write_config(cfg, os.path.join(run.work_dir, os.path.basename(run.config)))
            leave_outputs(run)

    def fused_run(runs, work_dir, name='fused', weights=None):
        out = os.path.join(work_dir, name)
        fused = Run(os.path.join(out, f'{name}_config.py'), out, [], name=name)
        if not fused.finished():
            os.makedirs(out, exist_ok=True)
            write_config(ensemble_config(dumped_config(runs[0]), len(runs),
                                         weights=weights), fused.config)
            leave_outputs(fused, 'fused.pth')
        return fused

    def write_pseudo_labels(config, checkpoint, out, options, score_thr, uncertain_thr):
        calls['pseudo'].append(dict(config=config, checkpoint=checkpoint, out=out,
                                    options=list(options), score_thr=score_thr,
                                    uncertain_thr=uncertain_thr))
        source = os.path.basename(os.path.dirname(checkpoint))
        found = dict(num_images=2, labeled=4, pseudo=PSEUDO_COUNTS.get(source, 1),
                     num_uncertain=0,
                     score_thr=score_thr, uncertain_thr=uncertain_thr,
                     checkpoint=checkpoint, checkpoint_stamp=file_stamps([checkpoint])[0])
        with open(out, 'w') as f:
            json.dump(dict(found, images={}, uncertain={}), f)
        return found

    monkeypatch.setattr(prior_fit, 'run_all', run_all)
    monkeypatch.setattr(prior_fit, 'fused_run', fused_run)
    monkeypatch.setattr(self_training, 'write_pseudo_labels', write_pseudo_labels)
    work = tmp_path / 'fit'
    work.mkdir()
    (work / 'estimate.json').write_text(json.dumps(ESTIMATE))

    def fit(**kwargs):
        return prior_fit.fit_prior(CONFIG, str(work), echo=lambda msg: None, **kwargs)
    return fit, work, calls


def test_the_student_fine_tunes_the_round_on_the_fused_detections(fake_fit):
    """The student: the round's config with the detector's own losses, the round's
    options without its priors (the box-fit negatives, the seed), the fused detector's
    pseudo-labels cut at its validation threshold with the band below it ignored, and
    the round's last checkpoint to start from."""
    fit, work, calls = fake_fit
    fit(uncertain_score=0.1)  # the default returns the student
    runs = {run.name: run for run in calls['trained']}
    assert list(runs) == ['provisional', 'x0.7', 'x2', 'self_trained', 'distilled']
    chosen = runs['x2'].options
    assert chosen[:2] == BOX_FIT and chosen[-1] == 'randomness.seed=0'
    priors = dict(option.split('=', 1) for option in chosen[2:-1])
    assert priors.keys() == {ROI_KEY, RPN_KEY}
    assert float(priors[ROI_KEY]) == pytest.approx(scale_odds(0.2, 2.0), abs=1e-3)
    assert float(priors[RPN_KEY]) == pytest.approx(scale_odds(0.01, 2.0), abs=1e-5)
    assert runs['self_trained'].options == [
        *chosen, f'train_dataloader.dataset.pseudo_labels={work / "pseudo_labels.json"}',
        *IGNORING]
    student = runs['distilled']
    assert student.config == str(work / 'distilled_student_config.py')
    assert student.work_dir == str(work / 'distilled')
    # the student keeps every detection its head scores
    assert student.options == [
        *BOX_FIT, 'randomness.seed=0',
        f'train_dataloader.dataset.pseudo_labels={work / "distill_labels.json"}',
        *IGNORING, 'model.test_cfg.rcnn.score_thr=0',
        f'load_from={work / "self_trained" / "iter_2.pth"}']
    own = Config.fromfile(student.config).model
    assert own.rpn_head.loss_cls.type == 'CrossEntropyLoss'
    assert own.rpn_head.loss_cls.use_sigmoid
    assert own.roi_head.bbox_head.loss_cls.type == 'CrossEntropyLoss'
    # the round's labels from the provisional (its point estimate, never below 0.5),
    # which ties with the chosen's in number; the student's from the fused detector
    # (its own config alone) at the threshold the fused detector's validation selected
    # (0.35; its point estimate chose 0.7), the band from 0.1 ignored
    round_labels, chosen_labels, distill_labels = calls['pseudo']
    assert round_labels['checkpoint'] == str(work / 'provisional' / 'iter_2.pth')
    assert round_labels['score_thr'] == 0.6 and round_labels['options'] == chosen
    assert chosen_labels['checkpoint'] == str(work / 'x2' / 'iter_2.pth')
    assert chosen_labels['out'] == str(work / 'pseudo_labels_x2.json')
    assert distill_labels == dict(
        config=str(work / 'fused' / 'fused_config.py'),
        checkpoint=str(work / 'fused' / 'fused.pth'),
        out=str(work / 'distill_labels.json'), options=[], score_thr=0.35,
        uncertain_thr=0.1)


def test_the_student_takes_a_cut_below_one_half_and_ignores_its_band(
        fake_fit, monkeypatch):
    """A fused detector whose validation selects 0.25 gives the student its detections
    from 0.25 (not floored at 0.5 as the round's are), from 0.1 up to 0.25 ignored, even
    when the round ignores nothing."""
    monkeypatch.setitem(VALIDATION, 'fused', (7, 0.25, 0.3))
    fit, work, calls = fake_fit
    fit()
    student = {run.name: run for run in calls['trained']}['distilled']
    assert [option for option in student.options if 'ignore_iof_thr' in option] == IGNORING
    assert calls['pseudo'][-1]['score_thr'] == 0.25
    assert calls['pseudo'][-1]['uncertain_thr'] == 0.1


@pytest.mark.parametrize('bound, point, cut', [
    (0.1, 0.6, 0.1),  # the CRC fit whose point estimate left the student one label
    (0.4, 0.3, 0.4), (None, 0.3, 0.3), (None, None, 0.5)])
def test_the_students_cut_is_the_validation_bounds_threshold(bound, point, cut):
    assert distillation_cut(dict(val_score_thr=bound, val_score_thr_point=point)) == cut


def test_the_score_floor_of_a_detector_and_the_students():
    """Two-stage detectors keep scores from test_cfg.rcnn.score_thr, one-stage ones
    from test_cfg.score_thr; the student keeps every detection at either key."""
    two_stage = Config.fromfile(CONFIG).model
    assert score_floor_key(two_stage) == 'test_cfg.rcnn.score_thr'
    one_stage = dict(type='ATSS', test_cfg=dict(score_thr=0.05, nms_pre=1000))
    assert score_floor_key(one_stage) == 'test_cfg.score_thr'
    with pytest.raises(ValueError, match='expected rcnn.score_thr or score_thr'):
        score_floor_key(dict(type='ATSS', test_cfg=dict(nms_pre=1000)))
    assert student_floor_option(CONFIG) == 'model.test_cfg.rcnn.score_thr=0'


def test_a_resumed_student_refuses_labels_cut_elsewhere(fake_fit, monkeypatch):
    """Labels written at the point estimate's threshold (as the workflow cut them before)
    are not learned again once the bound's threshold differs: the message says what to
    remove."""
    fit, work, calls = fake_fit
    monkeypatch.setitem(VALIDATION, 'fused', (7, 0.1, 0.6))
    fit()
    assert calls['pseudo'][-1]['score_thr'] == 0.1
    assert calls['pseudo'][-1]['uncertain_thr'] is None  # no band below a cut at 0.1
    labels = work / 'distill_labels.json'
    content = json.loads(labels.read_text())
    labels.write_text(json.dumps(dict(content, score_thr=0.6)))
    with pytest.raises(ValueError, match=re.escape(
            f'{labels} holds the detections scoring at least 0.6, this fit cuts its '
            'pseudo-labels at 0.1; use another --work-dir, or remove that file and the '
            'distilled folder beside it')):
        fit()


def test_the_fit_returns_the_student_and_reports_it_beside_the_fused_one(fake_fit):
    fit, work, _ = fake_fit
    summary = fit(final='distilled')
    written = json.loads((work / 'fit_prior.json').read_text())
    assert summary['chosen'] == written['chosen']
    assert written['chosen'] == 'distilled' and written['final'] == 'distilled'
    assert 'fine-tuned with its own loss on the detections above their validation ' \
        'threshold' in written['reason']
    assert [row['name'] for row in written['trainings']] == [
        'provisional', 'x0.7', 'x2', 'self_trained']
    fused, distilled = written['fused'], written['distilled']
    assert fused['checkpoint'] == str(work / 'fused' / 'fused.pth')
    assert fused['weights'] == pytest.approx(fusion_weights(written['trainings']))
    assert fused['val_score_thr'] == 0.35 and fused['test']['ap'] == pytest.approx(0.7)
    assert distilled['checkpoint'] == str(work / 'distilled' / 'iter_2.pth')
    assert distilled['run_dir'] == str(work / 'distilled')
    assert distilled['priors'] == {}  # its own loss: no prior
    assert distilled['val_score_thr'] == 0.45
    assert distilled['test'] == pytest.approx(dict(avg_f1=0.7, avg_recall=0.7,
                                                   avg_precision=0.7, ap=0.7))
    assert returned_training(written)['run_dir'] == str(work / 'distilled')
    assert os.path.samefile(work / 'fit_prior.pth', work / 'distilled' / 'iter_2.pth')
    config = str(work / 'distilled' / 'distilled_config.py')
    assert written['chosen_config'] == config and written['chosen_cfg_options'] == []
    # tools/test.py CONFIG fit_prior.pth --score-thr val: the student's own threshold,
    # though its validation dump does not lie beside fit_prior.pth
    cfg = Config.fromfile(config)
    assert validation_dump(str(work / 'fit_prior.pth'), cfg) == str(
        work / 'distilled' / 'cell_metrics' / 'val_per_image.json')
    assert validation_score_thr(str(work / 'fit_prior.pth'), cfg) == 0.45
    # the config as the student trained (options merged), no work dir to write over
    assert 'work_dir' not in cfg
    assert cfg.model.roi_head.bbox_head.loss_cls.type == 'CrossEntropyLoss'
    assert cfg.train_dataloader.dataset.pseudo_labels == str(work / 'distill_labels.json')
    assert cfg.load_from == str(work / 'self_trained' / 'iter_2.pth')
    # fit_prior_config.py goes with fit_prior.pth whatever the fit chose
    returned = Config.fromfile(written['returned_config'])
    assert written['returned_config'] == str(work / 'fit_prior_config.py')
    assert returned.validation_dump == 'distilled/cell_metrics/val_per_image.json'
    assert validation_score_thr(str(work / 'fit_prior.pth'), returned) == 0.45
    assert 'work_dir' not in returned and returned.model == cfg.model
    lines = format_summary(written).splitlines()
    assert [line.split()[0] for line in lines[5:7]] == ['fused', 'distilled']
    assert lines[6].split()[-5:] == ['0.700', '0.450', '-', '0.700', '0.700']
    assert lines[-2] == (f'its config: {config} (the distilled detector as it trained, '
                         'its validation dump recorded; tools/test.py tests it with that '
                         'checkpoint)')
    assert lines[-1] == (f'test it: python tools/test.py {work / "fit_prior_config.py"} '
                         f'{work / "fit_prior.pth"}')


def test_a_resumed_student_refuses_the_labels_of_a_fused_detector_made_again(fake_fit):
    fit, work, calls = fake_fit
    fused = fit(final='fused')
    assert fused['chosen'] == 'fused' and fused['distilled'] is None
    assert fused['chosen_config'] == str(work / 'fused' / 'fused_config.py')
    returned = Config.fromfile(work / 'fit_prior_config.py')
    assert returned.model.type == 'FusedEnsemble'
    assert returned.validation_dump == 'fused/cell_metrics/val_per_image.json'
    fit(final='distilled')
    fit(final='distilled')  # resumed: nothing trained or written again
    assert [run.name for run in calls['trained']][-1] == 'distilled'
    # the provisional's and the chosen's for the round, the fused one's for the student
    assert len(calls['trained']) == 5 and len(calls['pseudo']) == 3
    with open(work / 'fused' / 'fused.pth', 'ab') as f:  # the fused detector made again
        f.write(b' again')
    labels = work / 'distill_labels.json'
    with pytest.raises(ValueError, match=re.escape(
            f'{labels} holds the pseudo-labels of {work / "fused" / "fused.pth"} as it '
            'was when they were written, and that checkpoint has changed since (trained '
            'or fused again); use another --work-dir, or remove that file and the '
            'distilled folder beside it')):
        fit(final='distilled')
    labels.unlink()  # as the message says, and the student's folder
    shutil.rmtree(work / 'distilled')
    assert fit(final='distilled')['chosen'] == 'distilled'
    assert len(calls['trained']) == 6 and len(calls['pseudo']) == 4


def test_a_fit_resumed_with_another_source_names_the_one_it_was_made_with(
        fake_fit, monkeypatch):
    """A round trained on the provisional's pseudo-labels (a fit made with
    ``--pseudo-labels-from provisional``, as the default was) is not trained again on
    the chosen one's when the default finds those more: the message says how to resume
    it; with the choice it was made with, it resumes."""
    fit, work, calls = fake_fit
    monkeypatch.setitem(PSEUDO_COUNTS, 'x2', 5)
    fit(pseudo_labels_from='provisional')
    with pytest.raises(ValueError, match=re.escape(
            f'{work / "self_trained"} learned the pseudo-labels in '
            f'{work / "pseudo_labels.json"}, but this fit gives its round those in '
            f'{work / "pseudo_labels_x2.json"}; resume it with --pseudo-labels-from '
            'provisional')):
        fit()
    trained = len(calls['trained'])
    assert fit(pseudo_labels_from='provisional')['chosen'] == 'distilled'
    assert len(calls['trained']) == trained  # nothing trained again
