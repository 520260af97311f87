"""The prior fit (mmdet_pu.workflow.prior_fit, tools/fit_prior.py): the command
line's input errors, and a tiny real fit end to end."""
import json
import os
import shutil

import pytest
import torch
from mmengine.config import Config

from mmdet_pu.apis.cohort_records import read_slide_record
from mmdet_pu.evaluation.metric_dump import read_validation_thr
from mmdet_pu.prior.candidates import estimated_shares, scale_odds
from mmdet_pu.workflow import class_guard, self_training
from mmdet_pu.workflow.fit_choice import criterion_shares, fusion_weights
from mmdet_pu.workflow.fit_options import (SELF_TRAIN_MIN_SCORE, SELF_TRAIN_UNCERTAIN_SCORE,
                                           box_fit_options, load_fit_config)
from mmdet_pu.workflow.fit_report import format_summary, link_checkpoint
from mmdet_pu.workflow.prior_fit import fit_prior
from mmdet_pu.workflow.self_training import (check_pseudo_source, check_self_training,
                                             round_pseudo_labels, self_training_run)
from cellio.qupath import read_geojson
from tests._cli import run_script
from tests._data import REPO, make_tiny_coco, pu_model_extra, write_tiny_config
from tests._qupath_fixtures import write_pyramid_tiff
from tests.apis._fixtures import make_slide_image


def test_command_line_input_errors(tmp_path):
    config = str(REPO / 'configs/synthetic/synthetic_keep1_pu.py')
    for args, message in ((['--factors', '0.5', '-1'], "expected a number > 0, got '-1'"),
                          (['--factors', '2', '2'], '--factors repeat'),
                          (['--cfg-options', 'randomness.seed=3'], 'set by --seeds'),
                          (['--uncertain-score', '0.5'],
                           'uncertain_score: expected 0 <= uncertain_score < 0.5'),
                          (['--self-train-init', 'source'], 'invalid choice'),
                          (['--pseudo-labels-from', 'x2'], 'invalid choice')):
        proc = run_script('tools/fit_prior.py', config, *args, '--work-dir', tmp_path)
        assert proc.returncode == 2 and message in proc.stderr
    assert not any(tmp_path.iterdir())


#: What gives Faster R-CNN's RoI head box-fit negatives.
FASTER_BOX_FIT = ['model.roi_head.bbox_head.type=BoxFitShared2FCBBoxHead',
                  'model.train_cfg.rcnn.sampler.type=OverlapRandomSampler']
#: The same for each of Cascade R-CNN's three stages.
CASCADE_BOX_FIT = [option for i in range(3) for option in (
    f'model.roi_head.bbox_head.{i}.type=BoxFitShared2FCBBoxHead',
    f'model.train_cfg.rcnn.{i}.sampler.type=OverlapRandomSampler')]


@pytest.mark.parametrize('config, options, added', [
    ('synthetic/synthetic_keep1_pu.py', [], FASTER_BOX_FIT),
    ('pu/mitos14_vgg16_keep1_pu.py', [], FASTER_BOX_FIT),
    ('synthetic/synthetic_keep1_pu.py', FASTER_BOX_FIT, []),  # has them
    ('real/mnfinder_keep1_pu_boxfit.py', [], []),
    ('dense/synthetic_retinanet_keep1_pu.py', [], []),  # no RoI head
    ('dense/synthetic_cascade-rcnn_keep1_pu.py', [], CASCADE_BOX_FIT),  # each stage
    ('real/mnfinder_cascade-rcnn_keep1_pu_boxfit.py', [], []),
    ('real/mnfinder_cascade-rcnn_keep1_pu.py', CASCADE_BOX_FIT[:2], []),  # one stage has
    ('pu/nucls_mpu.py', [], FASTER_BOX_FIT),  # MultiPULoss: softmax
    ('synthetic/synthetic_keep1_pu.py',
     ['model.roi_head.bbox_head.loss_cls.use_sigmoid=True'], []),
])
def test_box_fit_negatives_are_added_to_every_roi_head_that_can_learn_them(
        config, options, added):
    found = box_fit_options(load_fit_config(str(REPO / 'configs' / config), options))
    assert found == added
    if added:  # the options build the box-fit heads
        cfg = load_fit_config(str(REPO / 'configs' / config), [*options, *found])
        heads = cfg.model.roi_head.bbox_head
        assert all(head.type == 'BoxFitShared2FCBBoxHead'
                   for head in (heads if isinstance(heads, list) else [heads]))


def test_self_training_needs_a_cell_dataset_after_the_options(tmp_path):
    """The check reads the config with the fit's options: a CocoDataset is refused
    before any training, and the option that makes it a CellCocoDataset is honoured."""
    data_root = tmp_path / 'data'
    make_tiny_coco(data_root, n_images=1, size=64)
    config = write_tiny_config(tmp_path / 'ce_tiny.py', data_root)
    work = tmp_path / 'fit'
    with pytest.raises(ValueError, match='train_dataloader.dataset is a CocoDataset'):
        fit_prior(str(config), str(work), echo=lambda msg: None)
    assert not work.exists()
    cell = load_fit_config(str(config), ['train_dataloader.dataset.type=CellCocoDataset'])
    check_self_training(cell, str(config))


def test_a_resumed_fit_refuses_the_pseudo_labels_of_another_detector(tmp_path):
    pseudo = tmp_path / 'pseudo_labels.json'
    check_pseudo_source(str(pseudo), 'fit/x2/iter_300.pth')  # none yet
    pseudo.write_text(json.dumps(dict(checkpoint='fit/x0.7/iter_300.pth', images={})))
    check_pseudo_source(str(pseudo), 'fit/x0.7/iter_300.pth')
    with pytest.raises(ValueError, match='pseudo-labels of fit/x0.7/iter_300.pth, but '
                                         'the self_trained detector of this fit learns '
                                         'those of fit/x2/iter_300.pth'):
        check_pseudo_source(str(pseudo), 'fit/x2/iter_300.pth')
    # the same source, written without the uncertain band this fit asks for
    with pytest.raises(ValueError, match='uncertain detections from score None, this '
                                         'fit asks for 0.1'):
        check_pseudo_source(str(pseudo), 'fit/x0.7/iter_300.pth', 0.1)


def test_the_round_has_half_the_fused_vote_and_the_criterion_shares_the_rest():
    rows = [dict(pu_criterion=c) for c in (1.0, 0.5, 0.5, 0.9)]
    assert fusion_weights(rows) == pytest.approx([0.25, 0.125, 0.125, 0.5])
    # no first training with a criterion above 0: they share the rest equally
    rows = [dict(pu_criterion=0.0)] * 3 + [dict(pu_criterion=1.0)]
    assert fusion_weights(rows) == pytest.approx([1 / 6, 1 / 6, 1 / 6, 0.5])


@pytest.mark.slow
@pytest.mark.usefixtures('forked_commands')
def test_tiny_fit_trains_estimates_chooses_and_resumes(tmp_path, monkeypatch):
    """Four trainings of 2 iterations: the provisional, the estimate x 0.5 and x 2, and
    the self-training on the provisional's detections at the chosen priors; each
    returned in turn, then fused, then a fifth, the round distilled from the fused."""
    data_root = tmp_path / 'data'
    make_tiny_coco(data_root, n_images=2, size=128)
    config = write_tiny_config(
        tmp_path / 'pu_tiny.py', data_root, extra=pu_model_extra(0.05, 0.3)
        + "val_evaluator = dict(type='CellDetMetric', score_thr_candidates=[0.0, 0.05, "
        "0.1, 0.3, 0.5])\ntest_evaluator = val_evaluator\n"
        # the dataset that takes pseudo-labels (self-training)
        + "train_dataloader['dataset']['type'] = 'CellCocoDataset'\n")
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join(
        filter(None, [str(REPO), os.environ.get('PYTHONPATH')])))
    work = tmp_path / 'fit'
    given = 'default_hooks.logger.interval=1'
    band = SELF_TRAIN_UNCERTAIN_SCORE
    summary = fit_prior(config, str(work), [given], factors=(0.5, 2.0), jobs=2,
                        echo=lambda msg: None, uncertain_score=band,
                        final='self_trained')

    estimate = json.loads((work / 'estimate.json').read_text())
    assert estimate['checkpoint'] == str(work / 'provisional' / 'iter_2.pth')
    shares = estimated_shares(estimate)
    names = [row['name'] for row in summary['trainings']]
    assert names == ['provisional', 'x0.5', 'x2', 'self_trained']
    # every training learns box-fit negatives (a Faster R-CNN config)
    assert summary['box_fit_options'] == FASTER_BOX_FIT
    for name in names:
        options = json.loads((work / name / 'run.json').read_text())['options']
        assert options[:2] == FASTER_BOX_FIT
    # the chosen training's options but the seed: its config with them trains it again
    assert summary['chosen_cfg_options'][:3] == [*FASTER_BOX_FIT, given]
    assert not any(o.startswith('randomness.seed=') for o in summary['chosen_cfg_options'])
    pseudo = json.loads((work / 'pseudo_labels.json').read_text())
    assert pseudo['score_thr'] >= SELF_TRAIN_MIN_SCORE and pseudo['num_images'] == 2
    assert pseudo['pseudo'] == sum(map(len, pseudo['images'].values()))
    # each pseudo-label's score, in its order (what pseudo_label_weights weighs it by)
    assert {name: len(v) for name, v in pseudo['scores'].items()} == \
        {name: len(v) for name, v in pseudo['images'].items()}
    assert all(pseudo['score_thr'] <= s <= 1 for v in pseudo['scores'].values() for s in v)
    assert pseudo['uncertain_thr'] == band
    assert pseudo['num_uncertain'] == sum(map(len, pseudo['uncertain'].values()))
    # the round learns whichever of the provisional and the chosen gives more
    round_row = summary['trainings'][-1]
    first = max(summary['trainings'][:3], key=lambda row: row['pu_criterion'])
    counts = round_row['pseudo_labels']
    assert list(counts) == list(dict.fromkeys(['provisional', first['name']]))
    assert counts['provisional'] == pseudo['pseudo']
    learned = round_row['pseudo_labels_of']
    assert counts[learned] == max(counts.values())
    learned_file = work / ('pseudo_labels.json' if learned == 'provisional'
                           else f'pseudo_labels_{learned}.json')
    record = json.loads((work / 'self_trained' / 'run.json').read_text())
    assert f'train_dataloader.dataset.pseudo_labels={learned_file}' in json.dumps(record)
    # the round ignores the uncertain detections: both assigners leave them out
    assert record['options'][-2:] == ['model.train_cfg.rpn.assigner.ignore_iof_thr=0.5',
                                      'model.train_cfg.rcnn.assigner.ignore_iof_thr=0.5']
    for factor in (0.5, 2):
        state = torch.load(work / f'x{factor:g}' / 'iter_2.pth', map_location='cpu',
                           weights_only=False)['state_dict']
        assert state['roi_head.bbox_head.loss_cls.prior'].item() == pytest.approx(
            scale_odds(shares['roi'][0], factor), abs=1e-4)
        assert state['rpn_head.loss_cls.prior'].item() == pytest.approx(
            scale_odds(shares['rpn'], factor), abs=1e-5)
    # final='self_trained' returns the self-trained detector; it learned those
    # detections at the priors of the best first training
    assert summary['chosen'] == 'self_trained' and summary['final'] == 'self_trained'
    assert (f'the pseudo-labels of {learned} at the priors of {first["name"]}'
            in summary['reason'])
    assert pseudo['checkpoint'] == str(work / 'provisional' / 'iter_2.pth')
    assert summary['trainings'][-1]['priors'] == first['priors']
    chosen_options = json.loads((work / first['name'] / 'run.json').read_text())['options']
    assert record['options'][:len(chosen_options)] == chosen_options
    assert os.path.samefile(work / 'fit_prior.pth', work / 'self_trained' / 'iter_2.pth')
    written = json.loads((work / 'fit_prior.json').read_text())
    assert written['chosen'] == summary['chosen'] and written['reason']
    assert written['chosen_config'] == config and written['self_train_loss'] == 'pu'
    assert written['uncertain_score'] == band and written['self_train_init'] == 'scratch'
    assert written['pseudo_labels_from'] == 'more'
    assert written['fused_source'] is None
    assert (work / 'fit_prior.png').read_bytes()[:4] == b'\x89PNG'
    print(format_summary(summary))  # renders

    # the same trainings, the best criterion of all four returned instead
    mtimes = {p: p.stat().st_mtime for p in work.glob('*/iter_2.pth')}
    again = fit_prior(config, str(work), [given], factors=(0.5, 2.0),
                      echo=lambda msg: None, final='criterion', uncertain_score=band)
    best = max(again['trainings'], key=lambda row: row['pu_criterion'])  # ties: first
    assert again['chosen'] == best['name'] and again['final'] == 'criterion'
    assert os.path.samefile(work / 'fit_prior.pth', best['checkpoint'])
    assert {p: p.stat().st_mtime for p in mtimes} == mtimes  # nothing trained again

    # final='fused': the same four trainings returned as one detector, their
    # detections fused
    fused = fit_prior(config, str(work), [given], factors=(0.5, 2.0),
                      echo=lambda msg: None, uncertain_score=band, final='fused')
    assert {p: p.stat().st_mtime for p in mtimes} == mtimes  # nothing trained again
    ensemble = torch.load(work / 'fused' / 'fused.pth', map_location='cpu',
                          weights_only=False)
    assert ensemble['meta']['members'] == [row['checkpoint'] for row in fused['trainings']]
    assert {key.split('.')[1] for key in ensemble['state_dict']} == {'0', '1', '2', '3'}
    assert fused['chosen'] == 'fused' and fused['final'] == 'fused'
    assert fused['fused']['weights'] == pytest.approx(
        fusion_weights(fused['trainings']))
    assert "weights=[" in (work / 'fused' / 'fused_config.py').read_text()
    assert fused['fused']['test']['ap'] is not None and 'FusedEnsemble' in fused['reason']
    assert os.path.samefile(work / 'fit_prior.pth', work / 'fused' / 'fused.pth')
    assert fused['chosen_config'] == str(work / 'fused' / 'fused_config.py')
    assert fused['chosen_cfg_options'] == []
    assert "type='FusedEnsemble'" in (work / 'fused' / 'fused_config.py').read_text()
    written_cfg = Config.fromfile(work / 'fused' / 'fused_config.py')
    # as written, not as evaluated: testing it elsewhere leaves the fit's dumps alone
    assert written_cfg.load_from is None and 'out_dir' not in written_cfg.test_evaluator
    dumps = [work / 'fused' / 'cell_metrics' / f'{split}_per_image.json'
             for split in ('val', 'test')]
    stamps = [path.stat().st_mtime for path in dumps]
    assert 'fused ' in format_summary(fused)
    fit_prior(config, str(work), [given], factors=(0.5, 2.0), echo=lambda msg: None,
              final='fused', uncertain_score=band)
    assert [path.stat().st_mtime for path in dumps] == stamps  # not evaluated again
    check_the_readme_runs_the_returned_detector(work, tmp_path)
    check_a_member_trained_again_rebuilds_the_fusion(config, work, [given], band)
    distilled = fit_prior(config, str(work), [given], factors=(0.5, 2.0),
                          echo=lambda msg: None, uncertain_score=band)  # the default
    check_the_distilled_detector_is_returned(distilled, work, tmp_path)
    check_the_guard_takes_classes_from_the_reference(config, work, [given], band,
                                                     monkeypatch, tmp_path)

    # the round learns the first trainings fused instead (their round removed first)
    (work / 'pseudo_labels.json').unlink()
    shutil.rmtree(work / 'self_trained')
    again = fit_prior(config, str(work), [given], factors=(0.5, 2.0),
                      echo=lambda msg: None, uncertain_score=band,
                      pseudo_labels_from='fused', final='fused')
    firsts = [work / name / 'iter_2.pth' for name in ('provisional', 'x0.5', 'x2')]
    assert [p.stat().st_mtime for p in firsts] == [mtimes[p] for p in firsts]
    source = torch.load(work / 'fused_first' / 'fused.pth', map_location='cpu',
                        weights_only=False)
    assert source['meta']['members'] == [row['checkpoint']
                                         for row in again['trainings'][:3]]
    source_cfg = Config.fromfile(work / 'fused_first' / 'fused_first_config.py')
    assert source_cfg.model.weights == pytest.approx(
        criterion_shares(again['trainings'][:3]))
    pseudo = json.loads((work / 'pseudo_labels.json').read_text())
    assert pseudo['checkpoint'] == str(work / 'fused_first' / 'fused.pth')
    # two iterations score no cell at the cut: the round asks the chosen training next
    assert pseudo['pseudo'] == 0
    chosen = json.loads((work / 'pseudo_labels_provisional.json').read_text())
    assert chosen['checkpoint'] == again['trainings'][0]['checkpoint']
    assert again['trainings'][-1]['pseudo_labels_of'] == 'provisional'
    assert 'learned the pseudo-labels of provisional at the priors of' in again['reason']
    assert again['pseudo_labels_from'] == 'fused'
    reported = json.loads((work / 'fit_prior.json').read_text())['fused_source']
    assert reported['name'] == 'fused_first' and reported['test']['ap'] is not None
    assert reported['checkpoint'] == str(work / 'fused_first' / 'fused.pth')
    assert again['trainings'][-1]['name'] == 'self_trained'


def check_the_guard_takes_classes_from_the_reference(config, work, options, band,
                                                     monkeypatch, tmp_path):
    """``guard='on'`` (one class; ``'auto'`` guards only several): the reference, the
    config with its own cross entropy, trains on the provisional's options; a class it
    ranks better in GUARD_LEVEL of the resamples is taken from it (with the level at 0,
    every class): the fit returns the distilled detector and the reference as one
    FusedEnsemble with votes per class, its members keeping every score, and the fused
    detector's members when it returns that one."""
    summary = fit_prior(config, str(work), options, factors=(0.5, 2.0),
                        echo=lambda msg: None, uncertain_score=band, guard='on')
    reference = Config.fromfile(work / 'reference_config.py')
    assert reference.model.rpn_head.loss_cls.type == 'CrossEntropyLoss'
    assert reference.model.roi_head.bbox_head.loss_cls.type == 'CrossEntropyLoss'
    trained_with = json.loads((work / 'reference' / 'run.json').read_text())['options']
    assert trained_with[:2] == FASTER_BOX_FIT and not any('prior' in o for o in trained_with)
    (name, compared), = summary['guard']['classes'].items()
    assert 0 <= compared['reference_better'] <= 1 and compared['val_ap'] is not None
    if not compared['from_reference']:
        assert summary['chosen'] == 'distilled' and summary['guarded'] is None

    monkeypatch.setattr(class_guard, 'GUARD_LEVEL', 0.0)
    guarded = fit_prior(config, str(work), options, factors=(0.5, 2.0),
                        echo=lambda msg: None, uncertain_score=band, guard='on')
    assert guarded['chosen'] == 'guarded' and f'{name} from the reference' in guarded['reason']
    assert guarded['guard']['classes'][name]['from_reference']
    cfg = Config.fromfile(work / 'guarded' / 'guarded_config.py')
    assert cfg.model.type == 'FusedEnsemble' and cfg.model.weights == [[0.0], [1.0]]
    assert cfg.model.score_exponents[0] == [1.0]
    assert cfg.model.score_exponents[1][0] == pytest.approx(
        class_guard.reference_exponent(class_guard.reference_run(
            config, str(work), trained_with)))
    assert cfg.model.detector.test_cfg.rcnn.score_thr == 0  # the reference's low scores
    members = torch.load(work / 'guarded' / 'fused.pth', map_location='cpu',
                         weights_only=False)['meta']['members']
    assert members == [str(work / 'distilled' / 'iter_2.pth'),
                       str(work / 'reference' / 'iter_2.pth')]
    assert os.path.samefile(work / 'fit_prior.pth', work / 'guarded' / 'fused.pth')
    assert guarded['guarded']['test']['ap'] is not None and 'guarded' in format_summary(guarded)
    tested = tmp_path / 'tested_guarded'
    proc = run_script('tools/test.py', work / 'fit_prior_config.py', work / 'fit_prior.pth',
                      '--work-dir', tested)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the fused detector returned: its four members and their votes, then the reference
    fused = fit_prior(config, str(work), options, factors=(0.5, 2.0),
                      echo=lambda msg: None, uncertain_score=band, guard='on',
                      final='fused')
    cfg = Config.fromfile(work / 'guarded' / 'guarded_config.py')
    assert fused['chosen'] == 'guarded' and cfg.model.num_members == 5
    assert cfg.model.weights == [[0.0]] * 4 + [[1.0]]


def check_the_readme_runs_the_returned_detector(work, tmp_path):
    """What the README's own-data section runs on a fit's output: tools/test.py on
    fit_prior_config.py (here the fused detector's) and fit_prior.pth at the validation
    threshold (its dump lies in fused/, not beside fit_prior.pth) with overlays, and
    tools/infer_slide.py on a slide."""
    val_thr = read_validation_thr(str(work / 'fused' / 'cell_metrics' / 'val_per_image.json'))
    assert val_thr is not None  # the fused detector's validation selected one
    fit_dumps = {p: p.stat().st_mtime for p in work.glob('*/cell_metrics/*.json')}
    config, checkpoint = work / 'fit_prior_config.py', work / 'fit_prior.pth'
    assert Config.fromfile(config).model.type == 'FusedEnsemble'
    tested, overlays = tmp_path / 'tested', tmp_path / 'overlays'
    proc = run_script('tools/test.py', config, checkpoint, '--score-thr', 'val',
                      '--show-dir', overlays, '--work-dir', tested)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tested / 'cell_metrics' / 'test_per_image.json').read_text())
    assert report['score_thr'] == val_thr and report['metrics']['cell/ap'] is not None
    assert len(report['images']) == 2 and len(list(overlays.glob('*.png'))) >= 2
    # the config names no work dir: testing it never writes over the fit's dumps
    assert 'work_dir' not in Config.fromfile(config)
    assert {p: p.stat().st_mtime for p in fit_dumps} == fit_dumps

    write_pyramid_tiff(tmp_path / 'slides' / 'case1.tif', make_slide_image(), levels=1)
    out = tmp_path / 'detections'
    proc = run_script('tools/infer_slide.py', config, checkpoint, tmp_path / 'slides',
                      '--out', out, '--score-thr', 'val', '--device', 'cpu',
                      '--no-progress')
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = read_slide_record(out, tmp_path / 'slides' / 'case1.tif')
    assert record['settings']['score_thr'] == val_thr
    cells = read_geojson(out / 'case1.geojson').cells
    assert all(cell.score >= val_thr for cell in cells)
    with open(out / 'case1.csv') as f:
        assert len(f.readlines()) == len(cells) + 1  # the header and a row per cell


def check_a_member_trained_again_rebuilds_the_fusion(config, work, options, band):
    """A member's checkpoint rewritten at the same path (its training run again): the
    fit fuses and evaluates anew, with the new weights, instead of returning the old
    fused detector and its metrics."""
    member = work / 'self_trained' / 'iter_2.pth'
    checkpoint = torch.load(member, map_location='cpu', weights_only=False)
    key = 'roi_head.bbox_head.fc_cls.weight'
    checkpoint['state_dict'][key] = checkpoint['state_dict'][key] + 1.0
    torch.save(checkpoint, member)
    dumps = [work / 'fused' / 'cell_metrics' / f'{split}_per_image.json'
             for split in ('val', 'test')]
    stamps = [path.stat().st_mtime_ns for path in dumps]
    fit_prior(config, str(work), options, factors=(0.5, 2.0), echo=lambda msg: None,
              uncertain_score=band, final='fused')
    fused = torch.load(work / 'fused' / 'fused.pth', map_location='cpu',
                       weights_only=False)['state_dict']
    assert torch.equal(fused[f'members.3.{key}'], checkpoint['state_dict'][key])
    assert all(path.stat().st_mtime_ns > stamp for path, stamp in zip(dumps, stamps))
    record = json.loads((work / 'fused' / 'run.json').read_text())
    assert record['member_stamps'][3] == [member.stat().st_size, member.stat().st_mtime_ns]
    assert os.path.samefile(work / 'fit_prior.pth', work / 'fused' / 'fused.pth')


def check_the_distilled_detector_is_returned(summary, work, tmp_path):
    """``final='distilled'`` (the default): the self-trained detector fine-tuned on the
    fused detector's pseudo-labels is returned, beside the fused one in the report, with
    a config that tools/test.py tests at 0.5 by default and at the student's own
    validation threshold with ``--score-thr val``."""
    labels = json.loads((work / 'distill_labels.json').read_text())
    assert labels['checkpoint'] == str(work / 'fused' / 'fused.pth')
    options = json.loads((work / 'distilled' / 'run.json').read_text())['options']
    assert f'train_dataloader.dataset.pseudo_labels={work / "distill_labels.json"}' \
        in options
    assert options[-1] == f'load_from={work / "self_trained" / "iter_2.pth"}'
    assert summary['chosen'] == 'distilled' and summary['fused']['test']['ap'] is not None
    assert summary['distilled']['test']['ap'] is not None
    assert os.path.samefile(work / 'fit_prior.pth', work / 'distilled' / 'iter_2.pth')
    config = work / 'distilled' / 'distilled_config.py'
    assert summary['chosen_config'] == str(config) and summary['chosen_cfg_options'] == []
    # the student ranks every detection its head scores, not from mmdet's 0.05
    assert Config.fromfile(config).model.test_cfg.rcnn.score_thr == 0
    returned = work / 'fit_prior_config.py'
    assert summary['returned_config'] == str(returned)
    tested = tmp_path / 'tested_distilled'
    proc = run_script('tools/test.py', returned, work / 'fit_prior.pth', '--work-dir', tested)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tested / 'cell_metrics' / 'test_per_image.json').read_text())
    assert report['score_thr'] == 0.5
    dump = work / 'distilled' / 'cell_metrics' / 'val_per_image.json'
    val_thr = read_validation_thr(str(dump))
    proc = run_script('tools/test.py', returned, work / 'fit_prior.pth', '--score-thr',
                      'val', '--work-dir', tested)
    if val_thr is None:  # its validation selected none: the message names its dump
        assert proc.returncode == 2 and str(dump) in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tested / 'cell_metrics' / 'test_per_image.json').read_text())
    assert report['score_thr'] == val_thr


def test_the_round_ignores_the_uncertain_band_and_may_start_from_its_source(tmp_path):
    """The round's options: the pseudo-label file, the ignore options of the config's
    assigners, and with ``init_from`` the source detector's weights; a file written
    with another band or cut is refused."""
    pseudo = tmp_path / 'pseudo_labels.json'
    source = str(tmp_path / 'x2' / 'iter_300.pth')
    pseudo.write_text(json.dumps(dict(images={}, uncertain={}, checkpoint=source,
                                      uncertain_thr=0.1, score_thr=0.6, pseudo=3)))
    ignoring = ['model.train_cfg.rpn.assigner.ignore_iof_thr=0.5']
    chosen = dict(name='x2', checkpoint=source, val_score_thr_point=0.6)
    found = round_pseudo_labels('pu.py', str(tmp_path), [], [chosen], 0.1, print)
    assert found == (chosen, str(pseudo), {'x2': 3})
    run = self_training_run('pu.py', str(tmp_path), ['randomness.seed=0'], str(pseudo),
                            uncertain_thr=0.1, ignoring=ignoring, init_from=source)
    assert run.options == ['randomness.seed=0',
                           f'train_dataloader.dataset.pseudo_labels={pseudo}',
                           *ignoring, f'load_from={source}']
    # no assigner that can ignore: no band asked of the file, nothing ignored
    with pytest.raises(ValueError, match='uncertain detections from score 0.1, this fit '
                                         'asks for None'):
        round_pseudo_labels('pu.py', str(tmp_path), [], [chosen], None, print)
    assert self_training_run('pu.py', str(tmp_path), [], str(pseudo),
                             ignoring=ignoring).options == [
        f'train_dataloader.dataset.pseudo_labels={pseudo}']
    # the source's point estimate moved (another validation): the file's cut is stale
    with pytest.raises(ValueError, match='holds the detections scoring at least 0.6, '
                                         'this fit cuts its pseudo-labels at 0.7'):
        round_pseudo_labels('pu.py', str(tmp_path), [],
                            [dict(chosen, val_score_thr_point=0.7)], 0.1, print)


def fake_pseudo_labels(monkeypatch, found_by_checkpoint):
    """Replace the detection of pseudo-labels by a writer of files holding
    ``found_by_checkpoint[checkpoint]`` pseudo-labels; returns the calls' arguments."""
    calls = []

    def write(config, checkpoint, path, options, score_thr, uncertain_thr):
        calls.append(dict(config=config, checkpoint=checkpoint, path=path,
                          options=options, score_thr=score_thr))
        found = dict(pseudo=found_by_checkpoint[checkpoint], labeled=4, num_images=2,
                     num_uncertain=0, checkpoint=checkpoint, score_thr=score_thr,
                     uncertain_thr=uncertain_thr)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            json.dump(dict(found, images={}), f)
        return found

    monkeypatch.setattr(self_training, 'write_pseudo_labels', write)
    return calls


def test_the_pseudo_labels_are_cut_at_the_point_estimates_threshold(tmp_path, monkeypatch):
    """The round's pseudo-labels keep the cut the workflow was measured with: the
    threshold of Lee & Liu's point estimate (not the lower bound the tests use), never
    below 0.5."""
    checkpoint = str(tmp_path / 'iter_2.pth')
    calls = fake_pseudo_labels(monkeypatch, {checkpoint: 5})
    for point, cut in ((0.7, 0.7), (0.3, SELF_TRAIN_MIN_SCORE), (None, 0.5)):
        source = dict(name='provisional', checkpoint=checkpoint, val_score_thr=0.4,
                      val_score_thr_point=point)
        round_pseudo_labels('pu.py', str(tmp_path / str(point)), [], [source], None,
                            print)
        assert calls[-1]['score_thr'] == cut


def test_a_source_without_pseudo_labels_hands_the_round_to_the_chosen(tmp_path,
                                                                      monkeypatch):
    """A source that scores no unlabeled cell at its cut would have the round train
    again as the chosen training did; the chosen's detections are learned instead, in
    their own file, and a resumed fit finds both files and writes nothing."""
    provisional = dict(name='provisional', checkpoint=str(tmp_path / 'p.pth'),
                       val_score_thr_point=0.2)
    chosen = dict(name='x2', checkpoint=str(tmp_path / 'x2.pth'), val_score_thr_point=0.6)
    calls = fake_pseudo_labels(monkeypatch, {provisional['checkpoint']: 0,
                                             chosen['checkpoint']: 7})
    said = []
    for _ in range(2):
        found = round_pseudo_labels('pu.py', str(tmp_path), ['o=1'],
                                    [provisional, chosen], None, said.append)
        assert found == (chosen, str(tmp_path / 'pseudo_labels_x2.json'),
                         {'provisional': 0, 'x2': 7})
    assert [(c['checkpoint'], c['path'], c['score_thr']) for c in calls] == [
        (provisional['checkpoint'], str(tmp_path / 'pseudo_labels.json'), 0.5),
        (chosen['checkpoint'], str(tmp_path / 'pseudo_labels_x2.json'), 0.6)]
    assert said.count('provisional scores no unlabeled training cell at 0.5: the round '
                      'learns the detections of x2 instead') == 2
    # a source with pseudo-labels is kept; the chosen's file is never written
    calls.clear()
    other = tmp_path / 'other'
    assert round_pseudo_labels('pu.py', str(other), [], [chosen, provisional], None,
                               print) == (chosen, str(other / 'pseudo_labels.json'),
                                          {'x2': 7})
    assert len(calls) == 1
    # no source with any: the last one, and a warning
    said.clear()
    none = tmp_path / 'none'
    assert round_pseudo_labels('pu.py', str(none), [], [provisional], None,
                               said.append)[0] is provisional
    assert said[-1].startswith('warning: no source scores an unlabeled training cell')


def test_the_round_learns_the_source_with_more_pseudo_labels(tmp_path, monkeypatch):
    """``more``: both sources are asked, each at its own cut; the one with more
    pseudo-labels is learned (the first on a tie), whichever comes first, and a resumed
    fit decides the same way from the files without detecting again."""
    provisional = dict(name='provisional', checkpoint=str(tmp_path / 'p.pth'),
                       val_score_thr_point=0.7)
    chosen = dict(name='x2', checkpoint=str(tmp_path / 'x2.pth'), val_score_thr_point=0.4)
    for counts, learned in (((132, 4054), chosen), ((592, 276), provisional),
                            ((5, 5), provisional)):
        work = tmp_path / f'{counts[0]}_{counts[1]}'
        calls = fake_pseudo_labels(monkeypatch, {provisional['checkpoint']: counts[0],
                                                 chosen['checkpoint']: counts[1]})
        said = []
        for _ in range(2):
            source, pseudo, found = round_pseudo_labels(
                'pu.py', str(work), [], [provisional, chosen], None, said.append,
                more=True)
            assert source is learned and found == {'provisional': counts[0],
                                                   'x2': counts[1]}
            name = 'pseudo_labels.json' if learned is provisional else 'pseudo_labels_x2.json'
            assert pseudo == str(work / name)
        assert [(c['checkpoint'], c['score_thr']) for c in calls] == [
            (provisional['checkpoint'], 0.7), (chosen['checkpoint'], 0.5)]
        assert said[-1] == (f'the round learns the pseudo-labels of {learned["name"]}, '
                            f'the most of provisional {counts[0]}, x2 {counts[1]}')
    # neither has any: the warning, and the chosen's duplicate as before
    fake_pseudo_labels(monkeypatch, {provisional['checkpoint']: 0, chosen['checkpoint']: 0})
    said = []
    source, pseudo, _ = round_pseudo_labels('pu.py', str(tmp_path / 'none'), [],
                                            [provisional, chosen], None, said.append,
                                            more=True)
    assert source is chosen and said[-1].startswith('warning: no source scores')


def test_a_fused_source_writes_its_pseudo_labels_with_its_own_config(tmp_path,
                                                                     monkeypatch):
    """The first trainings' fusion has its own config (its members' options merged):
    the pseudo-labels are detected with it alone, the round trains with the options."""
    fused = str(tmp_path / 'fused_first' / 'fused_first_config.py')
    source = dict(name='fused_first', checkpoint=str(tmp_path / 'fused_first' / 'fused.pth'),
                  val_score_thr_point=0.6, config=fused)
    calls = fake_pseudo_labels(monkeypatch, {source['checkpoint']: 3})
    _, pseudo, _ = round_pseudo_labels('pu.py', str(tmp_path), ['randomness.seed=0'],
                                       [source], None, print)
    assert [(c['config'], c['checkpoint'], c['options']) for c in calls] == [
        (fused, source['checkpoint'], [])]
    run = self_training_run('pu.py', str(tmp_path), ['randomness.seed=0'], pseudo)
    assert run.config == 'pu.py' and run.options[0] == 'randomness.seed=0'


def test_linking_the_same_checkpoint_again_leaves_no_temporary_file(tmp_path):
    first, second = tmp_path / 'a.pth', tmp_path / 'b.pth'
    first.write_bytes(b'a')
    second.write_bytes(b'b')
    target = tmp_path / 'fit_prior.pth'
    for source in (first, first, second, second, first):
        link_checkpoint(str(source), str(target))
        assert os.path.samefile(source, target)
        assert sorted(p.name for p in tmp_path.iterdir()) == ['a.pth', 'b.pth',
                                                              'fit_prior.pth']


def test_the_criterion_shares_a_vote_and_falls_back_to_equal_shares():
    rows = [dict(pu_criterion=c) for c in (1.0, -0.2, 0.5, 0.5)]
    assert criterion_shares(rows) == pytest.approx([0.5, 0.0, 0.25, 0.25])
    assert criterion_shares([dict(pu_criterion=0.0)] * 2) == [0.5, 0.5]


@pytest.mark.parametrize('kwargs, message', [
    (dict(self_train_init='source'), "self_train_init: expected one of .* got 'source'"),
    (dict(pseudo_labels_from='x2'), "pseudo_labels_from: expected one of .* got 'x2'"),
    (dict(uncertain_score=0.5), r'uncertain_score: expected 0 <= uncertain_score < 0.5'),
])
def test_an_unknown_round_start_or_band_is_an_error(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        fit_prior(str(REPO / 'configs/synthetic/synthetic_keep1_pu.py'), str(tmp_path),
                  echo=lambda msg: None, **kwargs)
    assert not any(tmp_path.iterdir())
