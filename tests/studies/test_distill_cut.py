"""The student at other cuts (studies.distill_cut, tools/distill_cut.py): the band, the
options, the resume guard, the table from test dumps, and the command's errors."""
import json

import pytest
import torch
from mmengine.structures import InstanceData

from mmdet.structures import DetDataSample

from mmdet_pu.workflow.fused_ensemble import file_stamps
from studies import distill_cut as study
from tests._cli import run_script
from tests.studies.test_comparison import evaluate, ranked_sample, write_val_dump

LABELS_KEY = 'train_dataloader.dataset.pseudo_labels'
IGNORE = 'model.train_cfg.rpn.assigner.ignore_iof_thr=0.5'


def test_band_starts_at_the_workflows_score_or_a_tenth_of_a_low_cut():
    assert study.band_low(0.2) == 0.1 and study.band_low(0.4) == 0.1
    assert study.band_low(0.1) == pytest.approx(0.01)
    assert study.band_low(0.05) == pytest.approx(0.005)
    assert study.probe_name(0.2) == 'distill_cut0.2'


def test_a_band_from_a_given_score_has_its_own_folder_and_stays_below_the_cut():
    assert study.band_low(0.2, band_from=0.01) == 0.01
    assert study.probe_name(0.2, band_from=0.01) == 'distill_cut0.2_band0.01'
    for low in (0.2, 0.3, 0.0):
        with pytest.raises(ValueError, match=f'band from {low:g}: expected a score in '
                                             r'\(0, 0.2\)'):
            study.band_low(0.2, band_from=low)


def test_options_keep_everything_but_the_pseudo_labels():
    options = ['randomness.seed=1', f'{LABELS_KEY}=fit/distill_labels.json', IGNORE]
    assert study.probe_options(options, 'fit/x.json') == [
        'randomness.seed=1', f'{LABELS_KEY}=fit/x.json', IGNORE]
    with pytest.raises(ValueError, match='not a distilled student'):
        study.probe_options(['randomness.seed=1'], 'fit/x.json')


def fake_fit(tmp_path, options):
    """A fit dir with the fused row and the student's record (no checkpoint trained)."""
    checkpoint = tmp_path / 'fused' / 'fused.pth'
    checkpoint.parent.mkdir()
    checkpoint.write_bytes(b'weights')
    summary = dict(fused=dict(name='fused', checkpoint=str(checkpoint),
                              config=str(tmp_path / 'fused' / 'fused_config.py')))
    (tmp_path / 'fit_prior.json').write_text(json.dumps(summary))
    (tmp_path / 'distilled').mkdir()
    config = tmp_path / 'student.py'  # an assigner that can ignore uncertain detections
    config.write_text("model = dict(train_cfg=dict(rpn=dict(assigner=dict("
                      "type='MaxIoUAssigner'))))\n")
    record = dict(config=str(config), options=options, trained=True)
    (tmp_path / 'distilled' / 'run.json').write_text(json.dumps(record))
    return checkpoint


def write_labels(path, checkpoint, uncertain_thr, score_thr):
    path.write_text(json.dumps(dict(checkpoint=str(checkpoint),
                                    checkpoint_stamp=file_stamps([str(checkpoint)])[0],
                                    uncertain_thr=uncertain_thr, score_thr=score_thr)))


def test_cut_run_reuses_its_labels_and_refuses_another_band(tmp_path):
    options = ['randomness.seed=1', f'{LABELS_KEY}=fit/distill_labels.json', IGNORE]
    checkpoint = fake_fit(tmp_path, options)
    labels = tmp_path / 'distill_cut0.2_labels.json'
    write_labels(labels, checkpoint, 0.1, 0.2)
    run = study.cut_run(str(tmp_path), 0.2, echo=print)
    assert run.work_dir == str(tmp_path / 'distill_cut0.2')
    assert run.config == str(tmp_path / 'student.py')
    assert run.options == ['randomness.seed=1', f'{LABELS_KEY}={labels}', IGNORE]
    # a student that ignored no band: the labels must hold none either
    (tmp_path / 'plain').mkdir()
    fake_fit(tmp_path / 'plain', options[:2])
    plain = tmp_path / 'plain' / 'distill_cut0.2_labels.json'
    write_labels(plain, tmp_path / 'plain' / 'fused' / 'fused.pth', 0.1, 0.2)
    with pytest.raises(ValueError, match='uncertain detections from score 0.1, this fit '
                       'asks for None'):
        study.cut_run(str(tmp_path / 'plain'), 0.2, echo=print)
    # labels cut elsewhere are refused, not reused
    write_labels(labels, checkpoint, 0.1, 0.3)
    with pytest.raises(ValueError, match='scoring at least 0.3'):
        study.cut_run(str(tmp_path), 0.2, echo=print)
    # a band from a given score: its own labels, whose band must start there
    wide = tmp_path / 'distill_cut0.2_band0.01_labels.json'
    write_labels(wide, checkpoint, 0.1, 0.2)
    with pytest.raises(ValueError, match='uncertain detections from score 0.1, this fit '
                       'asks for 0.01'):
        study.cut_run(str(tmp_path), 0.2, echo=print, band_from=0.01)
    write_labels(wide, checkpoint, 0.01, 0.2)
    run = study.cut_run(str(tmp_path), 0.2, echo=print, band_from=0.01)
    assert run.work_dir == str(tmp_path / 'distill_cut0.2_band0.01')
    assert run.options == ['randomness.seed=1', f'{LABELS_KEY}={wide}', IGNORE]
    with pytest.raises(ValueError, match='band from 0.01 asked, but this student ignores '
                                         r'no band \(its assigners ignore nothing\)'):
        study.cut_run(str(tmp_path / 'plain'), 0.2, echo=print, band_from=0.01)


def test_a_soft_student_weighs_every_detection_from_the_cut_and_ignores_no_band(tmp_path):
    """--soft: its own folder and labels, no band, the pipeline's packing replaced and
    the weights on; a head without soft targets is refused."""
    options = ['randomness.seed=1', f'{LABELS_KEY}=fit/distill_labels.json', IGNORE]
    checkpoint = fake_fit(tmp_path, options)
    (tmp_path / 'student.py').write_text(  # a plain head, then box-fit by option
        "model = dict(roi_head=dict(bbox_head=dict(type='Shared2FCBBoxHead')), "
        "train_cfg=dict(rpn=dict(assigner=dict(type='MaxIoUAssigner'))))\n"
        "train_dataloader = dict(dataset=dict(pipeline=[dict(type='LoadImageFromFile'), "
        "dict(type='PackDetInputs')]))\n")
    with pytest.raises(ValueError, match='bbox_head Shared2FCBBoxHead learns no soft '
                                         'targets'):
        study.cut_run(str(tmp_path), 0.1, echo=print, soft=True)
    options.insert(0, 'model.roi_head.bbox_head.type=BoxFitShared2FCBBoxHead')
    record = json.loads((tmp_path / 'distilled' / 'run.json').read_text())
    (tmp_path / 'distilled' / 'run.json').write_text(json.dumps(dict(record,
                                                                     options=options)))
    labels = tmp_path / 'distill_cut0.1_soft_labels.json'
    write_labels(labels, checkpoint, None, 0.1)
    run = study.cut_run(str(tmp_path), 0.1, echo=print, soft=True)
    assert run.work_dir == str(tmp_path / 'distill_cut0.1_soft')
    assert run.options == [*options[:2], f'{LABELS_KEY}={labels}', IGNORE,
                           'train_dataloader.dataset.pseudo_label_weights=True',
                           'train_dataloader.dataset.pipeline.1.type=PackCellInputs']


def test_a_fit_without_a_trained_student_is_named(tmp_path):
    fake_fit(tmp_path, [])
    (tmp_path / 'distilled' / 'run.json').write_text(json.dumps(dict(trained=False)))
    with pytest.raises(ValueError, match=r'distilled/run.json: no trained student'):
        study.cut_run(str(tmp_path), 0.2, echo=print)


def test_rows_read_f1_at_both_thresholds_ap_and_the_recall_ceiling(tmp_path):
    # 4 cells per image; detections (score, is a cell)
    images = [[(0.9, 1), (0.6, 1), (0.3, 0), (0.1, 1)], [(0.8, 1), (0.4, 1), (0.05, 0)]]
    run_dir = tmp_path / 'distill_cut0.2'
    metrics = evaluate(run_dir, [ranked_sample(i, 4, d) for i, d in enumerate(images)])
    write_val_dump(run_dir, 0.25)
    row, = study.measured('distill_cut0.2', str(run_dir))
    assert row['cls'] == 'cell' and row['recall_ceiling'] == pytest.approx(5 / 8)
    assert row['ap'] == pytest.approx(metrics['cell/cell/ap'])
    # F1 per image, averaged: at 0.5 (2/4 and 1/4 found, no FP), at 0.25 (+1 FP, +1 TP)
    assert row['f1'] == pytest.approx((2 * 2 / 6 + 2 * 1 / 5) / 2)
    assert row['f1_val'] == pytest.approx((2 * 2 / 7 + 2 * 2 / 6) / 2)
    assert row['val_score_thr'] == 0.25
    table = study.write_study(str(tmp_path), [row])
    assert '| distill_cut0.2 | 0.533 | 0.619 (0.25) |' in table
    assert json.loads((tmp_path / 'distill_cut.json').read_text())[0]['name'] == row['name']


@pytest.mark.parametrize('args, message', [
    (['{fit}', '--cuts', '0.2', '0.2'], '--cuts repeat: [0.2, 0.2]'),
    (['{fit}', '--cuts', '1.5'], 'cut 1.5: expected a score in (0, 1)'),
    (['{empty}', '--cuts', '0.2'], 'no fit_prior.json'),
    (['{fit}', '--cuts', '0.2', '0.1', '--band-from', '0.1'],
     '--band-from 0.1: expected a score in (0, 0.1), below every cut'),
    (['{fit}', '--cuts', '0.2', '--band-from', '0.01', '--soft'],
     '--band-from: a soft student ignores no band'),
])
def test_command_errors(tmp_path, args, message):
    fit, empty = tmp_path / 'fit', tmp_path / 'empty'
    fit.mkdir(), empty.mkdir()
    (fit / 'fit_prior.json').write_text('{}')
    result = run_script('tools/distill_cut.py',
                        *[a.format(fit=fit, empty=empty) for a in args])
    assert result.returncode == 2 and message in result.stderr
    assert 'Traceback' not in result.stderr


def write_coco(path, cells):
    """A COCO file of one class, ``cells``: {file_name: [[x1, y1, x2, y2], ...]}."""
    images = [dict(id=i, file_name=name, width=100, height=100)
              for i, name in enumerate(cells)]
    annotations = [dict(id=len(images) * 100 + k, image_id=i, category_id=1,
                        bbox=[x1, y1, x2 - x1, y2 - y1], area=(x2 - x1) * (y2 - y1))
                   for i, boxes in enumerate(cells.values())
                   for k, (x1, y1, x2, y2) in enumerate(boxes)]
    path.write_text(json.dumps(dict(images=images, annotations=annotations,
                                    categories=[dict(id=1, name='nucleus')])))


def test_label_quality_counts_each_cell_once_against_the_complete_labels(tmp_path):
    ann = tmp_path / 'train.json'
    write_coco(ann, {'a.png': [[0, 0, 10, 10], [20, 20, 30, 30], [50, 50, 60, 60]],
                     'b.png': [[0, 0, 10, 10]]})
    labels = tmp_path / 'labels.json'  # a.png's first cell and b.png's are labeled
    pseudo = {'a.png': [[20, 20, 30, 30, 0], [21, 21, 31, 31, 0], [70, 70, 80, 80, 0]]}
    labels.write_text(json.dumps(dict(labeled=2, pseudo=3, images=pseudo)))
    quality = study.label_quality(str(labels), str(ann))
    # one pseudo-label finds a cell, its twin and the third find none
    assert quality == dict(pseudo=3, precision=pytest.approx(3 / 5),
                           recall=pytest.approx(3 / 4))
    labels.write_text(json.dumps(dict(labeled=2, pseudo=1,
                                      images={'c.png': [[0, 0, 5, 5, 0]]})))
    with pytest.raises(ValueError, match=r"labels.json: image 'c.png' is not in .*"
                       r"train.json; the labels were written on another split"):
        study.label_quality(str(labels), str(ann))


def test_complete_labels_only_where_the_config_deletes(tmp_path):
    config = tmp_path / 'bench.py'
    config.write_text("train_dataloader = dict(dataset=dict(type='CellCocoDataset', "
                      "data_root='data/x/', ann_file='annotations/train.json'))\n"
                      "deletion = dict(type='KeepPerPatch', k=1)\n")
    assert study.complete_labels(str(config), []) == 'data/x/annotations/train.json'
    assert study.complete_labels(str(config), [
        'train_dataloader.dataset.ann_file=annotations/fold1/train.json']) == \
        'data/x/annotations/fold1/train.json'
    assert study.complete_labels(str(config), ['deletion=None']) is None


def test_the_table_shows_what_each_student_learned(tmp_path):
    row = dict(name='distill_cut0.2', cls='cell', val_score_thr=0.3, f1=0.8, f1_val=0.82, ap=0.85,
               recall_ceiling=0.9, labels=dict(pseudo=2221, precision=0.85, recall=0.916))
    fused = dict(row, name='fused', labels=None)
    table = study.format_rows([fused, row])
    assert '| fused | 0.800 | 0.820 (0.3) | 0.850 | 0.900 | - |' in table
    assert '| distill_cut0.2 | 0.800 | 0.820 (0.3) | 0.850 | 0.900 | 2,221: 0.850, 0.916 |' \
        in table


def two_class_sample(img_id, detections):
    """Two classes, two cells each (class c's at x = 40 c and 40 c + 20); ``detections``
    as ``(class, score, cell)``, ``cell`` the index of the cell its box lies on or None
    (a box far from every cell)."""
    gt_boxes = [[40 * c + 20 * k, 0, 40 * c + 20 * k + 10, 10] for c in (0, 1) for k in (0, 1)]
    boxes = [gt_boxes[cell] if cell is not None else [20 * k, 500, 20 * k + 10, 510]
             for k, (_, _, cell) in enumerate(detections)]
    s = DetDataSample(metainfo=dict(img_id=img_id, img_path=f'data/img{img_id}.png'))
    s.pred_instances = InstanceData(
        bboxes=torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4),
        scores=torch.tensor([score for _, score, _ in detections], dtype=torch.float32),
        labels=torch.tensor([c for c, _, _ in detections], dtype=torch.long))
    s.gt_instances = InstanceData(bboxes=torch.tensor(gt_boxes, dtype=torch.float32),
                                  labels=torch.tensor([0, 0, 1, 1]))
    return s


def test_rows_of_several_classes_hold_each_class_and_its_own_ceiling(tmp_path):
    """One row per class, each class's recall ceiling over its own cells (a detection
    of the other class on a cell finds nothing), and a class column in the table."""
    run_dir = tmp_path / 'fused'
    # class 0: one of its two cells found; class 1: both, one of them at a low score;
    # a class-0 detection on a class-1 cell finds no cell
    detections = [(0, 0.9, 0), (0, 0.8, 2), (1, 0.7, 2), (1, 0.05, 3), (1, 0.6, None)]
    metrics = evaluate(run_dir, [two_class_sample(0, detections)], classes=('a', 'b'))
    rows = study.measured('fused', str(run_dir))
    assert [row['cls'] for row in rows] == ['a', 'b']
    assert [row['recall_ceiling'] for row in rows] == [pytest.approx(0.5), pytest.approx(1)]
    assert [row['ap'] for row in rows] == [pytest.approx(metrics['cell/a/ap']),
                                           pytest.approx(metrics['cell/b/ap'])]
    table = study.format_rows(rows)
    assert table.splitlines()[0].startswith('| detector | class | F1 at the test')
    assert '| fused | b | ' in table and '| 1.000 | - |' in table
