"""mmdet's one-stage detectors and Cascade R-CNN train with the PU losses (CPU, generated
data; docs/method.md#dense-detectors)."""
import math

import pytest
import torch
from mmengine.config import Config
from mmengine.optim import OptimWrapper
from mmengine.registry import init_default_scope

from mmdet.registry import MODELS
import mmdet_pu  # noqa: F401  (registers the heads and losses)
from tests.models._dense_detectors import (CASCADE, DENSE, detector_batch, mmdet_model,
                                           slim_dense_model)

SIZE = 128
STEPS = 6


def train(model, num_classes, steps=STEPS, seed=0):
    """``steps`` Adam steps on one generated batch; the total loss of every step."""
    torch.manual_seed(seed)
    data = detector_batch(model, 2, num_classes, SIZE, seed)
    optim = OptimWrapper(torch.optim.Adam(model.parameters(), lr=1e-3))
    model.train()
    history = []
    for _ in range(steps):
        losses = model(**data, mode='loss')
        loss, log = model.parse_losses(losses)
        assert all(math.isfinite(value.item()) for value in log.values()), log
        optim.update_params(loss)
        history.append(loss.item())
    return history, data


def assert_trains(model, num_classes, watched):
    """Finite losses that decrease on a fixed batch, ``watched`` trainable parameters
    move, and the trained model predicts."""
    before = {name: p.detach().clone() for name, p in model.named_parameters()
              if name.startswith(watched) and p.requires_grad}
    assert before
    history, data = train(model, num_classes)
    assert history[-1] < history[0], history
    after = dict(model.named_parameters())
    assert all(not torch.equal(before[name], after[name]) for name in before)
    model.eval()
    with torch.no_grad():
        results = model(**data, mode='predict')
    assert len(results) == 2 and all(torch.isfinite(r.pred_instances.scores).all()
                                     for r in results)


CLASSIFIERS = {'retinanet': 'bbox_head.retina_cls', 'atss': 'bbox_head.atss_cls',
               'fcos': 'bbox_head.conv_cls', 'gfl': 'bbox_head.gfl_cls',
               'rtmdet': 'bbox_head.rtm_cls'}


@pytest.mark.parametrize('num_classes,prior', [(1, dict(prior=0.01)),
                                               (2, dict(priors=[0.01, 0.005]))])
@pytest.mark.parametrize('name', list(DENSE))
def test_dense_detector_trains_with_its_pu_head_and_loss(name, num_classes, prior):
    """mmdet's default model dict with only bbox_head.type and the loss's type and
    prior changed (as a config override would merge them)."""
    init_default_scope('mmdet')
    _, _, pu_head, pu_loss = DENSE[name]
    model_cfg = slim_dense_model(name, num_classes)
    model_cfg.bbox_head.type = pu_head
    model_cfg.bbox_head.loss_cls.update(type=pu_loss, **prior)
    model = MODELS.build(model_cfg)
    assert type(model.bbox_head.loss_cls).__name__ == pu_loss
    assert_trains(model, num_classes, (CLASSIFIERS[name], 'backbone'))


def slim_cascade(num_classes, loss_cls):
    """mmdet's Cascade R-CNN (R-50 FPN) with a ResNet-18, 64 channels, fewer RoIs, and
    ``loss_cls(stage)`` as each stage's classification loss."""
    model = mmdet_model(CASCADE)
    model.backbone.update(depth=18, init_cfg=None)
    model.neck.update(in_channels=[64, 128, 256, 512], out_channels=64)
    model.rpn_head.update(in_channels=64, feat_channels=64)
    model.roi_head.bbox_roi_extractor.out_channels = 64
    for stage, head in enumerate(model.roi_head.bbox_head):
        head.update(in_channels=64, fc_out_channels=128, num_classes=num_classes,
                    loss_cls=loss_cls(stage, head.loss_cls))
    model.train_cfg.rpn_proposal.update(nms_pre=500, max_per_img=200)
    for stage in model.train_cfg.rcnn:
        stage.sampler.num = 128
    model.test_cfg.rpn.update(nms_pre=500, max_per_img=200)
    return model


STAGE_PRIORS = [0.1, 0.15, 0.2]


def test_cascade_rcnn_trains_with_pu_loss_in_every_stage():
    init_default_scope('mmdet')

    def pu_loss(stage, default):  # mmdet's CrossEntropyLoss dict, type and prior changed
        return dict(default, type='PULoss', prior=STAGE_PRIORS[stage])

    model = MODELS.build(slim_cascade(1, pu_loss))
    for stage, head in enumerate(model.roi_head.bbox_head):
        assert type(head.loss_cls).__name__ == 'PULoss'
        assert head.loss_cls.prior.item() == pytest.approx(STAGE_PRIORS[stage])
    assert_trains(model, 1, ('roi_head.bbox_head', 'backbone'))


def test_cascade_rcnn_trains_with_multi_class_pu_loss():
    init_default_scope('mmdet')
    model = MODELS.build(slim_cascade(3, lambda stage, default: dict(
        default, type='MultiPULoss', priors=[0.05, 0.04, 0.03])))
    assert all(head.fc_cls.out_features == 4 for head in model.roi_head.bbox_head)
    assert_trains(model, 3, ('roi_head.bbox_head', 'backbone'))


def test_cascade_stage_priors_are_set_by_their_config_keys():
    """model.roi_head.bbox_head.<stage>.loss_cls.prior (list items by index)."""
    init_default_scope('mmdet')
    cfg = Config(dict(model=slim_cascade(
        1, lambda stage, default: dict(default, type='PULoss', prior=0.1))))
    cfg.merge_from_dict({f'model.roi_head.bbox_head.{stage}.loss_cls.prior': prior
                         for stage, prior in enumerate(STAGE_PRIORS)})
    model = MODELS.build(cfg.model)
    assert [head.loss_cls.prior.item() for head in model.roi_head.bbox_head] == \
        pytest.approx(STAGE_PRIORS)


def test_multi_pu_loss_replaces_the_type_of_mmdets_cross_entropy_dict():
    """mmdet's stage dicts carry use_sigmoid=False; MultiPULoss is softmax only."""
    default = mmdet_model(CASCADE).roi_head.bbox_head[0].loss_cls
    loss = MODELS.build(dict(default, type='MultiPULoss', priors=[0.1, 0.2]))
    assert loss.priors.tolist() == pytest.approx([0.1, 0.2])
    with pytest.raises(ValueError, match=r'loss_cls\.use_sigmoid: MultiPULoss is a '
                                         r'softmax loss'):
        MODELS.build(dict(default, type='MultiPULoss', priors=[0.1], use_sigmoid=True))
