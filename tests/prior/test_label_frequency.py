"""The label-frequency estimate of every PU stage of dense and cascade detectors
(mmdet_pu.prior.label_frequency; tools/estimate_prior.py and the fit on such configs)."""
import json
import os
import subprocess
import sys

import pytest
import torch
from mmengine.config import Config
from mmengine.structures import InstanceData

from mmdet_pu.engine.launch import build_runner
from mmdet_pu.prior.candidates import estimated_shares, scale_odds
from mmdet_pu.prior.estimate_file import format_table, read_estimate
from mmdet_pu.prior.label_frequency import count_stages
from mmdet_pu.workflow.prior_fit import fit_prior
from tests._data import REPO, make_tiny_coco, write_tiny_config
from tests.prior.test_positive_share import (CELLS, SECOND_IMAGE, SQUARE_ANCHORS,
                                             anchors_per_image, base_model, samples)

HEAD_KEY = 'model.bbox_head.loss_cls.prior'
RPN_KEY = 'model.rpn_head.loss_cls.prior'
STAGE_KEYS = [f'model.roi_head.bbox_head.{i}.loss_cls.prior' for i in range(3)]


def detections(boxes, labels, scores):
    return InstanceData(bboxes=torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4),
                        labels=torch.tensor(labels, dtype=torch.long),
                        scores=torch.tensor(scores, dtype=torch.float32))


def square_anchor_retinanet(num_classes):
    """RetinaNet whose anchors are stride x stride squares: each cell of ``CELLS`` is
    exactly one anchor (IoU 1) and at most 0.25 of any other, so a cell makes one
    positive anchor and none is ignored."""
    return base_model('retinanet_r18-slim_fpn.py', num_classes,
                      **{f'bbox_head.anchor_generator.{key}': value
                         for key, value in SQUARE_ANCHORS.items()})


def batch_of(labeled, size=64):
    gen = torch.Generator().manual_seed(0)
    return dict(inputs=[torch.randint(0, 256, (3, size, size), dtype=torch.uint8,
                                      generator=gen) for _ in labeled],
                data_samples=samples(labeled, size))


@pytest.mark.parametrize('num_classes,labels,pseudo,complete', [
    (1, ([0, 0, 0], [0]), (3, ), (4, )),
    (2, ([0, 1, 1], [1]), (1, 2), (1, 3)),
])
def test_the_estimate_counts_the_labeled_and_the_detected_cells(num_classes, labels,
                                                                pseudo, complete):
    """Image 1: three cells, the first labeled; detected: the second (a new cell), the
    first again shifted by 2 px (IoU 0.62, the labeled cell, whatever its class) and the
    third below the score threshold. Image 2: its one cell labeled, nothing detected."""
    model = square_anchor_retinanet(num_classes)
    first, second = labels
    found = [detections([CELLS[1], [10., 10., 26., 26.], CELLS[2]],
                        [second[0], 1 - first[0] if num_classes > 1 else 0, first[2]],
                        [0.9, 0.8, 0.3]),
             detections([], [], [])]
    truths = [samples([(CELLS, first)])[0].gt_instances,
              samples([(SECOND_IMAGE, second)])[0].gt_instances]
    batch = batch_of([(CELLS[:1], first[:1]), (SECOND_IMAGE, second)])
    counts = count_stages(model, [(batch, found, truths)], num_classes, score_thr=0.5)

    total = 2 * anchors_per_image(64)
    shares = counts.label_frequency['model.bbox_head.loss_cls']
    oracle = counts.oracle['model.bbox_head.loss_cls']
    # one positive anchor per cell: labeled + new detected cells, per class
    assert (shares.positives, shares.total) == (pseudo, total)
    assert shares.shares == tuple(n / total for n in pseudo)
    assert (oracle.positives, oracle.total) == (complete, total)
    assert shares.labeled == oracle.labeled == ((2, ) if num_classes == 1 else (1, 1))
    assert counts.labeled_cells.tolist() == list(shares.labeled)
    assert counts.pseudo_cells.tolist() == list(pseudo)
    assert counts.complete_cells.tolist() == list(complete)


@pytest.mark.parametrize('base', ['retinanet_r18-slim_fpn.py',
                                  'cascade-rcnn_r18-slim_fpn.py'])
def test_with_every_cell_labeled_and_found_the_estimate_is_the_oracle(base):
    """Every stage (dense head; RPN and each cascade stage, whose random samplers draw
    once for both cell sets)."""
    model = base_model(base, 2)
    labeled = [(CELLS, [0, 1, 1]), (SECOND_IMAGE, [1])]
    found = [detections(boxes, classes, [0.9] * len(boxes)) for boxes, classes in labeled]
    truths = [sample.gt_instances for sample in samples(labeled, 128)]
    torch.manual_seed(0)
    counts = count_stages(model, [(batch_of(labeled, 128), found, truths)], 2)
    assert counts.label_frequency == counts.oracle
    assert set(counts.oracle) == ({'model.bbox_head.loss_cls'} if 'retina' in base else {
        'model.rpn_head.loss_cls', *(key[:-len('.prior')] for key in STAGE_KEYS)})
    assert all(sum(share.positives) > 0 for share in counts.oracle.values())


def test_complete_cells_for_every_batch_or_none():
    model = square_anchor_retinanet(1)
    labeled = [(CELLS[:1], [0])]
    truths = [samples(labeled)[0].gt_instances]
    none = [detections([], [], [])]
    with pytest.raises(ValueError, match='for some batches only'):
        count_stages(model, [(batch_of(labeled), none, truths),
                             (batch_of(labeled), none, None)], 1)


# PU losses, keep-1 data as CellCocoDataset, CellDetMetric (the fit's criterion)
DATA = """
deletion = dict(type='KeepPerPatch', k=1, order='random', seed=0)
train_dataloader['dataset'].update(type='CellCocoDataset')
val_dataloader['dataset'].update(type='CellCocoDataset')
val_evaluator = dict(type='CellDetMetric')
test_evaluator = val_evaluator
"""
DETECTORS = {
    'retinanet': ('retinanet_r18-slim_fpn.py', DATA + """
model = dict(bbox_head=dict(type='PURetinaHead',
                            loss_cls=dict(type='FocalPULoss', prior=0.01)))
"""),
    'fcos': ('fcos_r18-slim_fpn.py', DATA + """
model = dict(bbox_head=dict(type='PUFCOSHead',
                            loss_cls=dict(type='FocalPULoss', prior=0.01)))
"""),
    'cascade': ('cascade-rcnn_r18-slim_fpn.py', DATA + """
model = dict(
    rpn_head=dict(type='PURPNHead', loss_cls=dict(_delete_=True, type='PULoss',
                                                  prior=0.01, use_sigmoid=True)),
    roi_head=dict(bbox_head=[
        dict(head, loss_cls=dict(head['loss_cls'], type='PULoss', prior=prior))
        for head, prior in zip(_base_.model.roi_head.bbox_head, [0.3, 0.4, 0.5])]))
"""),
}


def tiny_config(tmp_path, name):
    make_tiny_coco(tmp_path / 'data', n_images=2, size=128)
    model, extra = DETECTORS[name]
    return write_tiny_config(tmp_path / f'{name}_pu.py', tmp_path / 'data', extra=extra,
                             model=model)


def tools_env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(REPO), os.environ.get('PYTHONPATH')])))


@pytest.fixture(scope='module', params=list(DETECTORS))
def trained(request, module_tmp_path):
    """A tiny PU RetinaNet / FCOS / Cascade R-CNN trained for 2 iterations on keep-1 data."""
    tmp_path = module_tmp_path / request.param
    tmp_path.mkdir()
    config = tiny_config(tmp_path, request.param)
    cfg = Config.fromfile(config)
    cfg.work_dir = str(tmp_path / 'work')
    cfg.val_dataloader = cfg.val_cfg = cfg.val_evaluator = None  # training only
    build_runner(cfg).train()
    return request.param, config, str(tmp_path / 'work' / 'iter_2.pth'), tmp_path


def estimate(config, checkpoint, out, *options):
    proc = subprocess.run(
        [sys.executable, 'tools/estimate_prior.py', config, checkpoint, '--out', str(out),
         *options], cwd=REPO, capture_output=True, text=True, env=tools_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert format_table(report) in proc.stdout
    return report


def test_command_line_estimates_every_stage(trained):
    name, config, checkpoint, tmp_path = trained
    report = estimate(config, checkpoint, tmp_path / 'estimate.json', '--oracle')
    keys = [HEAD_KEY] if name != 'cascade' else [RPN_KEY, *STAGE_KEYS]
    stages = ['head'] if name != 'cascade' else ['rpn', 'roi0', 'roi1', 'roi2']
    assert report['detector'] == ('cascade' if name == 'cascade' else 'dense')
    assert list(report['stages']) == stages
    assert [stage['key'] for stage in report['stages'].values()] == keys
    assert report['trained_with'] == (dict(head=0.01) if name != 'cascade' else
                                      dict(rpn=0.01, roi0=0.3, roi1=0.4, roi2=0.5))
    # one labeled cell per image (keep-1) of the 6 generated ones
    assert report['cells']['labeled'] == {'cell0': 2}
    assert report['cells']['complete'] == {'cell0': 12}
    assert report['cells']['pseudo_complete']['cell0'] >= 2
    for stage in report['stages'].values():
        n_p = sum(stage['n_p'].values()) if isinstance(stage['n_p'], dict) \
            else stage['n_p']
        assert stage['n'] == n_p + stage['n_u'] and n_p > 0
        lf = stage['estimates']['label_frequency']
        assert n_p / stage['n'] <= lf['value'] <= 1  # the labeled cells are counted
        assert lf['c_all'] == pytest.approx(2 / report['cells']['pseudo_complete']['cell0'])
        assert stage['estimates']['oracle']['c_all'] == pytest.approx(2 / 12)
    recommended = [report['recommended'][stage] for stage in stages]
    assert recommended == [float(f'{stage["estimates"]["label_frequency"]["value"]:.3g}')
                           for stage in report['stages'].values()]
    assert report['cfg_options'] == [f'{key}={value!r}'
                                     for key, value in zip(keys, recommended)]
    # a sweep around it varies the main stage (the head, the first cascade stage)
    main = read_estimate(str(tmp_path / 'estimate.json'))
    stage = 'head' if name != 'cascade' else 'roi0'
    assert (main.key, main.prior) == (report['stages'][stage]['key'],
                                      report['recommended'][stage])


def test_with_complete_labels_and_no_detection_the_estimate_is_the_oracle(trained):
    """No deletion and no detection above the threshold: pseudo-complete = labeled =
    complete cells, the same draw of every sampler."""
    _, config, checkpoint, tmp_path = trained
    report = estimate(config, checkpoint, tmp_path / 'complete.json', '--oracle',
                      '--score-thr', '1', '--cfg-options', 'deletion=None')
    for stage in report['stages'].values():
        estimates = stage['estimates']
        assert estimates['label_frequency'] == estimates['oracle']


@pytest.mark.slow
@pytest.mark.parametrize('name', ['retinanet', 'cascade'])  # FCOS's key is RetinaNet's
@pytest.mark.usefixtures('forked_commands')
def test_tiny_fit_of_a_dense_and_a_cascade_config(name, tmp_path, monkeypatch):
    """The provisional training and one candidate (x2) of 2 iterations each (the
    self-training round is tested in tests/workflow/test_prior_fit.py)."""
    config = tiny_config(tmp_path, name)
    monkeypatch.setenv('PYTHONPATH', tools_env()['PYTHONPATH'])
    work = tmp_path / 'fit'
    summary = fit_prior(config, str(work), factors=(2.0, ), self_train=False,
                        echo=lambda msg: None)

    report = json.loads((work / 'estimate.json').read_text())
    shares = estimated_shares(report)
    assert summary['estimated_shares'] == shares
    assert set(summary['estimators'].values()) == {'label_frequency'}
    assert [row['name'] for row in summary['trainings']] == ['provisional', 'x2']
    state = torch.load(work / 'x2' / 'iter_2.pth', map_location='cpu',
                       weights_only=False)['state_dict']
    for stage, share in shares.items():
        key = report['stages'][stage]['key']
        prior = state[key.removeprefix('model.')].item()
        expected = scale_odds(share if stage == 'rpn' else share[0], 2)
        assert prior == pytest.approx(expected, rel=1e-3, abs=1e-5)
        assert summary['trainings'][1]['priors'][stage] == pytest.approx(prior, rel=1e-6)
    assert os.path.isfile(work / 'fit_prior.pth')
    assert (work / 'fit_prior.png').read_bytes()[:4] == b'\x89PNG'


def test_split_batches_refuse_a_resizing_pipeline():
    """Labels loaded after a resize stay in the image's frame, detections come in the
    model input's: the estimate and the pseudo-labels need scale 1."""
    from mmdet.structures import DetDataSample

    from mmdet_pu.prior.samples import split_batches

    def item(scale):
        sample = DetDataSample(metainfo=dict(img_path='tiles/a.png', scale_factor=scale))
        return dict(inputs=torch.zeros(3, 8, 8), data_samples=sample)
    assert len(list(split_batches([item((1.0, 1.0))], [0]))) == 1
    with pytest.raises(ValueError, match=r'tiles/a\.png: the test pipeline resizes it '
                                         r'\(scale_factor \(0\.5, 0\.5\)\)'):
        list(split_batches([item((0.5, 0.5))], [0]))
