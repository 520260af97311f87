"""The config keys that hold pi: what a sweep sets and where each stage's prior is."""
import pytest
from mmengine.config import Config

from mmdet_pu.prior.keys import (ROI_PRIOR_KEY, RPN_PRIOR_KEY, detector_kind,
                                 find_prior_keys, get_key, loss_prior_key, stage_name,
                                 stage_prior_keys)
from tests._data import REPO, make_tiny_coco, pu_model_extra, write_tiny_config

CONFIGS = REPO / 'configs'
PU_KEYS = [RPN_PRIOR_KEY, ROI_PRIOR_KEY]


def tiny_config(tmp_path):
    data_root = tmp_path / 'data'
    make_tiny_coco(data_root, n_images=2, size=128)
    return write_tiny_config(tmp_path / 'pu_tiny.py', data_root,
                             extra=pu_model_extra(0.3, 0.3))


def test_stage_keys_of_the_shipped_configs():
    binary = Config.fromfile(str(CONFIGS / 'synthetic' / 'synthetic_keep1_pu.py'))
    assert stage_prior_keys(binary) == (ROI_PRIOR_KEY, RPN_PRIOR_KEY, False)
    # multi-class: the hook sets the RPN prior (the sum of the class priors) ...
    multi = Config.fromfile(
        str(CONFIGS / 'synthetic' / 'synthetic_multi_cap2_mpu_prior_update.py'))
    assert stage_prior_keys(multi) == ('custom_hooks.0.anchor_prior', RPN_PRIOR_KEY, True)
    # ... unless told not to: then the RPN has its own prior
    multi.custom_hooks[0].update_rpn_prior = False
    assert stage_prior_keys(multi) == ('custom_hooks.0.anchor_prior', RPN_PRIOR_KEY, False)
    ce = Config.fromfile(str(CONFIGS / 'synthetic' / 'synthetic_keep1_ce.py'))
    with pytest.raises(ValueError, match="ce.py: model.roi_head.bbox_head.loss_cls is "
                       "'CrossEntropyLoss'; expected a PULoss"):
        stage_prior_keys(ce, 'ce.py')


def test_default_keys_binary_and_multi_class(tmp_path):
    cfg = Config.fromfile(tiny_config(tmp_path))
    assert find_prior_keys(cfg) == PU_KEYS
    multi = Config(dict(
        model=dict(rpn_head=dict(loss_cls=dict(type='PULoss', prior=0.6)),
                   roi_head=dict(bbox_head=dict(loss_cls=dict(type='MultiPULoss',
                                                              priors=[0.3, 0.2])))),
        custom_hooks=[dict(type='EMAHook'), dict(type='PriorUpdateHook',
                                                 anchor_prior=0.3)]))
    # pi_1 of the hook; the hook derives the other priors and the RPN prior from it
    assert find_prior_keys(multi) == ['custom_hooks.1.anchor_prior']
    assert get_key(multi, 'custom_hooks.1.anchor_prior') == 0.3
    with pytest.raises(KeyError, match="no '5'"):
        get_key(multi, 'custom_hooks.5.anchor_prior')
    # fixed class priors (no hook): one swept value cannot set them
    fixed = Config.fromfile(str(REPO / 'configs' / 'synthetic' /
                                'synthetic_multi_cap2_mpu.py'))
    with pytest.raises(ValueError, match='fixed per-class priors'):
        find_prior_keys(fixed)


def test_per_stage_rpn_prior_is_not_swept(tmp_path):
    """An RPN prior that differs from the RoI head's is a per-stage prior: kept."""
    cfg = Config.fromfile(tiny_config(tmp_path))
    cfg.model.rpn_head.loss_cls.prior = 0.006
    assert find_prior_keys(cfg) == ['model.roi_head.bbox_head.loss_cls.prior']
    shipped = Config.fromfile(str(REPO / 'configs' / 'synthetic' / 'synthetic_keep1_pu.py'))
    assert find_prior_keys(shipped) == ['model.roi_head.bbox_head.loss_cls.prior']
    paper = Config.fromfile(str(REPO / 'configs' / 'pu' / 'mitos14_vgg16_keep1_pu.py'))
    assert find_prior_keys(paper) == PU_KEYS


def test_keys_of_the_dense_and_cascade_configs():
    dense = Config.fromfile(str(CONFIGS / 'dense' / 'synthetic_retinanet_keep1_pu.py'))
    assert detector_kind(dense) == 'dense'
    assert find_prior_keys(dense) == ['model.bbox_head.loss_cls.prior']
    assert loss_prior_key(dense, 'model.bbox_head.loss_cls') == \
        'model.bbox_head.loss_cls.prior'
    cascade = Config.fromfile(str(CONFIGS / 'dense' / 'synthetic_cascade-rcnn_keep1_pu.py'))
    assert detector_kind(cascade) == 'cascade'
    stages = [f'model.roi_head.bbox_head.{i}.loss_cls.prior' for i in range(3)]
    # every RoI stage; the RPN's own (different) prior is kept
    assert find_prior_keys(cascade) == stages
    cascade.model.rpn_head.loss_cls.prior = cascade.model.roi_head.bbox_head[0].loss_cls.prior
    assert find_prior_keys(cascade) == [RPN_PRIOR_KEY, *stages]
    assert loss_prior_key(cascade, 'model.roi_head.bbox_head.2.loss_cls') == stages[2]
    assert detector_kind(Config.fromfile(
        str(CONFIGS / 'synthetic' / 'synthetic_keep1_pu.py'))) == 'two_stage'
    # the CE parent has no PU loss; fixed per-class priors cannot be swept
    ce = Config.fromfile(str(CONFIGS / 'dense' / 'synthetic_cascade-rcnn_keep1_ce.py'))
    assert loss_prior_key(ce, 'model.roi_head.bbox_head.0.loss_cls') is None
    assert loss_prior_key(ce, 'model.roi_head.bbox_head.7.loss_cls') is None
    multi = Config.fromfile(str(CONFIGS / 'dense' / 'synthetic_multi_atss_cap2_pu.py'))
    assert loss_prior_key(multi, 'model.bbox_head.loss_cls') == \
        'model.bbox_head.loss_cls.priors'
    with pytest.raises(ValueError, match='model.bbox_head.loss_cls.priors holds fixed '
                       'per-class priors'):
        find_prior_keys(multi)


@pytest.mark.parametrize('loss_key,name', [
    ('model.rpn_head.loss_cls', 'rpn'), ('model.bbox_head.loss_cls', 'head'),
    ('model.roi_head.bbox_head.loss_cls', 'roi'),
    ('model.roi_head.bbox_head.2.loss_cls', 'roi2'),
    ('model.roi_head.mask_head.loss_cls', 'roi_head.mask_head')])
def test_stage_names(loss_key, name):
    assert stage_name(loss_key) == name
