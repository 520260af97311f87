"""Training the slim Faster R-CNN with the PU losses (CPU, generated data)."""
import math

import pytest
from mmengine.config import Config
from mmengine.registry import init_default_scope

from mmdet.registry import MODELS
from mmdet_pu.engine.runner import CellRunner
from tests._data import REPO, make_tiny_coco, write_tiny_config

PU_MODEL = """
model = dict(
    rpn_head=dict(
        type='PURPNHead',
        loss_cls=dict(_delete_=True, type='PULoss', prior={rpn_prior},
                      use_sigmoid=True)),
    roi_head=dict(bbox_head=dict(num_classes={num_classes}, loss_cls={bbox_loss})))
"""


def train(tmp_path, name, num_classes, rpn_prior, bbox_loss, iters=30):
    data_root = tmp_path / 'data'
    make_tiny_coco(data_root, n_images=4, size=128, num_classes=num_classes)
    extra = PU_MODEL.format(rpn_prior=rpn_prior, num_classes=num_classes,
                            bbox_loss=bbox_loss)
    config = write_tiny_config(tmp_path / f'{name}.py', data_root, num_classes,
                               max_iters=iters, batch_size=2, extra=extra)
    cfg = Config.fromfile(config)
    cfg.work_dir = str(tmp_path / 'work')
    # training only: IterBasedTrainLoop would validate after the last iteration
    cfg.val_dataloader = cfg.val_cfg = cfg.val_evaluator = None
    runner = CellRunner.from_cfg(cfg)
    runner.train()
    return runner


def assert_learns(runner, loss_cls_type):
    assert type(runner.model.roi_head.bbox_head.loss_cls).__name__ == loss_cls_type
    assert type(runner.model.rpn_head).__name__ == 'PURPNHead'
    hub = runner.message_hub
    for key in ('loss', 'loss_rpn_cls', 'loss_rpn_bbox', 'loss_cls', 'loss_bbox'):
        values = hub.get_scalar(f'train/{key}').data[0]
        assert len(values) == 30 and all(math.isfinite(v) for v in values), key
    loss = hub.get_scalar('train/loss').data[0]
    assert sum(loss[-5:]) / 5 < sum(loss[:5]) / 5
    # PUCorrectionLoggerHook (default_runtime.py): per iteration and PU loss, the share
    # of the last 10 iterations whose bracket the clamp replaced
    for name in ('rpn_head', 'roi_head.bbox_head'):
        shares = hub.get_scalar(f'train/pu_corrected.{name}').data[0]
        assert len(shares) == 30 and all(0 <= share <= 1 for share in shares), name
        assert shares[0] in (0.0, 1.0) and all(
            round(10 * share, 6) % 1 == 0 for share in shares[9:]), name


def test_binary_pu_training(tmp_path):
    runner = train(tmp_path, 'pu_binary', 1, rpn_prior=0.1,
                   bbox_loss="dict(_delete_=True, type='PULoss', prior=0.1)")
    assert_learns(runner, 'PULoss')


def test_multi_class_pu_training(tmp_path):
    runner = train(tmp_path, 'pu_multi', 3, rpn_prior=0.3,
                   bbox_loss="dict(_delete_=True, type='MultiPULoss', "
                             "priors=[0.1, 0.1, 0.1])")
    assert_learns(runner, 'MultiPULoss')


@pytest.mark.parametrize('config,rpn_prior,bbox_loss', [
    ('synthetic/synthetic_keep1_pu.py', 0.006,
     dict(type='PULoss', prior=0.25, use_sigmoid=False, loss_weight=1.0)),
    ('synthetic/synthetic_keep1_naive_pu.py', 0.006,
     dict(type='PULoss', prior=0.25, use_sigmoid=False, estimator='unlabeled',
          loss_weight=1.0)),
    ('synthetic/synthetic_multi_cap2_mpu_prior_update.py', 0.27,
     dict(type='MultiPULoss', priors=[0.1, 0.1, 0.07], loss_weight=1.0)),
])
def test_method_configs_compose(config, rpn_prior, bbox_loss):
    method = 'mpu' if bbox_loss['type'] == 'MultiPULoss' else 'pu'
    config = REPO / 'configs' / config
    cfg = Config.fromfile(str(config))
    assert cfg.model.rpn_head.type == 'PURPNHead'
    assert cfg.model.rpn_head.loss_cls.prior == rpn_prior
    assert cfg.model.rpn_head.loss_cls.use_sigmoid
    assert cfg.model.roi_head.bbox_head.loss_cls.to_dict() == bbox_loss
    # the documented keys set pi with --cfg-options
    key = 'priors' if method == 'mpu' else 'prior'
    value = [0.2, 0.1, 0.1] if method == 'mpu' else 0.05
    cfg.merge_from_dict({'model.rpn_head.loss_cls.prior': 0.05,
                         f'model.roi_head.bbox_head.loss_cls.{key}': value})
    init_default_scope('mmdet')
    model = MODELS.build(cfg.model)
    assert model.rpn_head.loss_cls.prior.item() == pytest.approx(0.05)
    assert getattr(model.roi_head.bbox_head.loss_cls, key).tolist() == \
        pytest.approx(value)
