"""The self-training round with the detector's own losses (mmdet_pu.workflow.own_loss,
``tools/fit_prior.py --self-train-loss own``)."""
import json
import os.path as osp

import pytest
from mmengine.config import Config
from mmengine.registry import init_default_scope

from mmdet.registry import MODELS
from mmdet_pu.engine.launch import parse_cfg_options
from mmdet_pu.engine.runner import CellRunner
from mmdet_pu.prior.keys import PU_LOSSES
from mmdet_pu.workflow.fit_report import format_summary
from mmdet_pu.workflow.own_loss import OWN_LOSSES, own_loss_options, write_own_loss_config
from mmdet_pu.workflow.prior_fit import fit_prior
from mmdet_pu.workflow.self_training import self_training_run
from tests._data import REPO, make_tiny_coco, pu_model_extra, write_tiny_config

CONFIGS = REPO / 'configs'


def own(config, tmp_path):
    out = str(tmp_path / 'own.py')
    replaced = write_own_loss_config(str(CONFIGS / config), out)
    return replaced, Config.fromfile(out)


def test_faster_rcnn_gets_cross_entropy_and_keeps_its_heads(tmp_path):
    replaced, cfg = own('real/mnfinder_keep1_pu_boxfit.py', tmp_path)
    assert replaced == ['model.rpn_head.loss_cls', 'model.roi_head.bbox_head.loss_cls']
    assert cfg.model.rpn_head.loss_cls == dict(
        type='CrossEntropyLoss', use_sigmoid=True, loss_weight=1.0)
    assert cfg.model.roi_head.bbox_head.loss_cls == dict(
        type='CrossEntropyLoss', use_sigmoid=False, loss_weight=1.0)
    # box-fit negatives and the one-call RPN stay; everything else is the config's
    assert cfg.model.roi_head.bbox_head.type == 'BoxFitShared2FCBBoxHead'
    assert cfg.model.rpn_head.type == 'PURPNHead'
    source = Config.fromfile(str(CONFIGS / 'real/mnfinder_keep1_pu_boxfit.py'))
    assert cfg.train_dataloader == source.train_dataloader
    assert cfg.optim_wrapper == source.optim_wrapper
    init_default_scope('mmdet')
    model = MODELS.build(cfg.model)
    assert type(model.roi_head.bbox_head.loss_cls).__name__ == 'CrossEntropyLoss'


@pytest.mark.parametrize('config,loss', [
    ('real/mnfinder_retinanet_keep1_pu.py',
     dict(type='FocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25, loss_weight=1.0)),
    ('real/mnfinder_rtmdet_keep1_pu.py',
     dict(type='QualityFocalLoss', use_sigmoid=True, beta=2.0, loss_weight=1.0)),
])
def test_dense_heads_get_their_focal_losses(tmp_path, config, loss):
    replaced, cfg = own(config, tmp_path)
    assert replaced == ['model.bbox_head.loss_cls']
    assert cfg.model.bbox_head.loss_cls == loss
    init_default_scope('mmdet')
    MODELS.build(cfg.model)


def test_every_cascade_stage_and_the_prior_update_hook(tmp_path):
    replaced, cfg = own('real/mnfinder_cascade-rcnn_keep1_pu.py', tmp_path)
    assert replaced == ['model.rpn_head.loss_cls'] + [
        f'model.roi_head.bbox_head.{i}.loss_cls' for i in range(3)]
    assert {head.loss_cls.type for head in cfg.model.roi_head.bbox_head} == {
        'CrossEntropyLoss'}
    _, cfg = own('synthetic/synthetic_multi_cap2_mpu_prior_update.py', tmp_path)
    assert cfg.model.roi_head.bbox_head.loss_cls.type == 'CrossEntropyLoss'
    assert not any(hook.type == 'PriorUpdateHook' for hook in cfg.custom_hooks)


def test_an_interrupted_write_leaves_the_config_as_it_was(tmp_path, monkeypatch):
    out = tmp_path / 'own.py'
    out.write_text('previous = 1\n')

    def interrupted(cfg):
        raise RuntimeError('interrupted')

    monkeypatch.setattr(Config, 'pretty_text', property(interrupted))
    with pytest.raises(RuntimeError, match='interrupted'):
        write_own_loss_config(str(CONFIGS / 'real/mnfinder_keep1_pu_boxfit.py'), str(out))
    assert out.read_text() == 'previous = 1\n'
    assert [p.name for p in tmp_path.iterdir()] == ['own.py']


def test_a_config_without_pu_loss_is_an_error(tmp_path):
    with pytest.raises(ValueError, match='no PU loss'):
        own('real/mnfinder_keep1_ce.py', tmp_path)


def test_options_inside_a_replaced_loss_are_dropped():
    options = ['model.roi_head.bbox_head.loss_cls.prior=0.2',
               'model.rpn_head.loss_cls.nonnegative=nnpu',
               'model.roi_head.bbox_head.loss_bbox.loss_weight=2',
               'randomness.seed=1']
    kept = own_loss_options(
        options, ['model.rpn_head.loss_cls', 'model.roi_head.bbox_head.loss_cls'])
    assert kept == options[2:]


def test_every_pu_loss_has_an_own_loss():
    assert set(OWN_LOSSES) == set(PU_LOSSES)


def test_the_self_training_run_trains_the_own_loss_config(tmp_path):
    """fit_prior's self-training run with ``loss='own'``: the written config, the chosen
    training's options without its priors, the pseudo-labels; two iterations train."""
    data_root = tmp_path / 'data'
    make_tiny_coco(data_root, n_images=2, size=128)
    config = write_tiny_config(
        tmp_path / 'pu_tiny.py', data_root, extra=pu_model_extra(0.05, 0.3)
        + "train_dataloader['dataset']['type'] = 'CellCocoDataset'\n")
    work = tmp_path / 'fit'
    work.mkdir()
    pseudo = work / 'pseudo_labels.json'
    pseudo.write_text(json.dumps(dict(images={}, labeled=12, pseudo=0, num_images=2,
                                      score_thr=0.5, checkpoint='fit/x2/iter_300.pth')))
    chosen_options = ['model.roi_head.bbox_head.loss_cls.prior=0.2',
                      'model.rpn_head.loss_cls.prior=0.01', 'randomness.seed=0']
    run = self_training_run(config, str(work), chosen_options, str(pseudo.resolve()),
                            loss='own')
    assert run.config == osp.join(str(work), 'self_trained_config.py')
    assert run.options == ['randomness.seed=0',
                           f'train_dataloader.dataset.pseudo_labels={pseudo.resolve()}']
    cfg = Config.fromfile(run.config)
    cfg.merge_from_dict(parse_cfg_options(run.options))
    cfg.work_dir = str(tmp_path / 'train')
    cfg.val_dataloader = cfg.val_cfg = cfg.val_evaluator = None
    runner = CellRunner.from_cfg(cfg)
    runner.train()
    assert type(runner.model.roi_head.bbox_head.loss_cls).__name__ == 'CrossEntropyLoss'
    assert runner.iter == 2


def test_an_unknown_self_train_loss_or_final_choice_is_an_error(tmp_path):
    with pytest.raises(ValueError, match='self_train_loss'):
        fit_prior(str(CONFIGS / 'synthetic/synthetic_keep1_pu.py'), str(tmp_path),
                  self_train_loss='ce', echo=lambda msg: None)
    with pytest.raises(ValueError, match="final: expected one of .* got 'best'"):
        fit_prior(str(CONFIGS / 'synthetic/synthetic_keep1_pu.py'), str(tmp_path),
                  final='best', echo=lambda msg: None)
    assert not any(tmp_path.iterdir())


def test_the_summary_names_the_own_loss_config():
    row = dict(name='self_trained', priors=dict(roi=0.2), val_recall=0.8,
               pu_criterion=1.0, test=dict(avg_f1=0.8, ap=0.8))
    summary = dict(trainings=[row], chosen='self_trained', reason='best', checkpoint='c',
                   config='pu.py', chosen_config='fit/self_trained_config.py',
                   chosen_cfg_options=['train_dataloader.dataset.pseudo_labels=p.json'])
    lines = format_summary(summary).splitlines()
    assert lines[-2] == 'its config: fit/self_trained_config.py (the own-loss self-training)'
    assert lines[-1].startswith('its options: --cfg-options train_dataloader')
    summary['chosen_config'] = 'pu.py'
    assert 'its config' not in format_summary(summary)
