"""Every shipped experiment config composes, its data pipelines run and its model trains.

For each config under ``configs/`` (``_base_`` excluded):

* the composition wires the parent's bases as docs/design.md says (classes, the
  deletion of the train and val loaders, hooks);
* its train / val / test datasets are built on a miniature dataset in the prepared
  layout (``annotations/fold0/{train,val,test,test_whole}.json``) written with the
  config's class names, and one sample of each goes through its pipeline;
* its custom hooks build.

Each distinct model config (many experiment configs share one) is built once and runs
one forward / backward pass in loss mode on a generated batch. To keep VGG16's 4096-d
fc6 affordable on CPU, the test samples fewer proposals and RoIs than the configs do.
The models are two-stage (Faster R-CNN: an RPN and one box head; Cascade R-CNN: an RPN
and a box head per stage) or one-stage (``configs/dense/``: one dense head).
"""
import copy
import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmengine.structures import InstanceData

import mmdet_pu  # noqa: F401
from mmdet.registry import DATASETS, HOOKS, MODELS
from mmdet.structures import DetDataSample
from mmdet_pu.datasets import apply_deletion
from tests._data import REPO, make_tiny_coco

CONFIG_ROOT = REPO / 'configs'
CONFIGS = sorted(path for path in CONFIG_ROOT.rglob('*.py') if '_base_' not in path.parts)
SPLITS = ('train', 'val', 'test', 'test_whole')
IMAGE_SIZE = 160
CELLS_PER_IMAGE = 6


def config_id(path):
    return str(path.relative_to(CONFIG_ROOT))


@lru_cache(maxsize=None)
def load_config(path):
    """The config as its runner (``CellRunner``) sees it: ``deletion`` in the loaders."""
    return apply_deletion(Config.fromfile(str(path)))


def test_every_paper_experiment_has_a_config():
    names = {config_id(path) for path in CONFIGS}
    expected = {'pu/nucls_mpu.py', 'pu/mitos14_vgg16_keep1_pu.py',
                'pu/mitos14_vgg16_keep1_naive_pu.py', 'pu/tupac_vgg16_keep1_pu.py',
                'baselines/mitos14_vgg16_keep1_weighted_ce.py',
                'baselines/mitos14_vgg16_keep1_focal.py',
                'baselines/nucls_vgg16_upper_bound.py'}
    for model in ('vgg16', 'r50', 'r101'):
        expected |= {f'pu/mitos14_{model}_keep1_pu.py',
                     f'baselines/mitos14_{model}_keep1_ce.py',
                     f'baselines/mitos14_{model}_keep1_bde.py',
                     f'baselines/mitos14_{model}_upper_bound.py'}
    for k in (1, 2, 5):
        expected |= {f'{folder}/crchisto_vgg16_keep{k}_{method}.py'
                     for folder, method in (('pu', 'pu'), ('baselines', 'ce'),
                                            ('baselines', 'bde'))}
    assert expected <= names


def test_every_dense_experiment_has_a_config():
    """Issue #30: PU for one-stage and cascade detectors, CE / PU / upper bound each."""
    names = {config_id(path) for path in CONFIGS}
    expected = set()
    for model in ('retinanet', 'atss', 'rtmdet', 'cascade-rcnn'):
        for prefix, deletion in (('synthetic', 'keep1'), ('synthetic_multi', 'cap2')):
            expected |= {f'dense/{prefix}_{model}_{deletion}_ce.py',
                         f'dense/{prefix}_{model}_{deletion}_pu.py',
                         f'dense/{prefix}_{model}_upper_bound.py'}
    for model in ('retinanet_r50', 'atss_r50', 'rtmdet_s', 'cascade-rcnn_r50'):
        for dataset, deletion in (('mitos14', 'keep1'), ('crchisto', 'keep1'),
                                  ('tupac', 'keep1'), ('nucls', 'cap10')):
            expected |= {f'dense/{dataset}_{model}_{deletion}_ce.py',
                         f'dense/{dataset}_{model}_{deletion}_pu.py',
                         f'dense/{dataset}_{model}_upper_bound.py'}
    assert expected <= names


# ---------------------------------------------------------------- models (configs) ----

def box_heads(model_cfg):
    """The box head configs: the dense head, the RoI head's, or one per cascade stage."""
    if 'roi_head' not in model_cfg:
        return [model_cfg.bbox_head]
    heads = model_cfg.roi_head.bbox_head
    return list(heads) if isinstance(heads, (list, tuple)) else [heads]


def classification_losses(model_cfg):
    """Every classification loss config of the model: the RPN's, then the box heads'."""
    heads = box_heads(model_cfg)
    if 'rpn_head' in model_cfg:
        heads = [model_cfg.rpn_head, *heads]
    return [head.loss_cls for head in heads]


PU_LOSSES = {'PULoss', 'MultiPULoss', 'FocalPULoss', 'QualityFocalPULoss'}


# ---------------------------------------------------------------- data ----------------

def write_prepared_dataset(root, classes):
    """A miniature dataset in data_prep's layout with the given category names."""
    rng = np.random.default_rng(0)
    for split in SPLITS:
        ann_file = Path(make_tiny_coco(
            root, n_images=2, size=IMAGE_SIZE, num_classes=len(classes),
            cells_per_image=CELLS_PER_IMAGE, split=split))
        coco = json.loads(ann_file.read_text())
        coco['categories'] = [dict(id=i + 1, name=name) for i, name in enumerate(classes)]
        for ann in coco['annotations']:
            ann['score'] = float(rng.uniform(0.5, 1))  # MITOS pathologist agreement
            ann['original'] = ann['id'] % 2 == 1  # TUPAC: also in the original labels
        if split == 'test_whole':
            half = IMAGE_SIZE // 2
            for image in coco['images']:
                image['tiles'] = [[x, y, half, half] for y in (0, half) for x in (0, half)]
        fold = Path(root) / 'annotations' / 'fold0'
        fold.mkdir(exist_ok=True)
        (fold / f'{split}.json').write_text(json.dumps(coco))
        ann_file.unlink()


@pytest.fixture(scope='module')
def dataset_roots(tmp_path_factory):
    """data_root per tuple of class names, written on first use."""
    roots = {}

    def root_for(classes):
        if classes not in roots:
            root = tmp_path_factory.mktemp('prepared')
            write_prepared_dataset(root, classes)
            roots[classes] = str(root) + '/'
        return roots[classes]
    return root_for


def build_dataset(dataset_cfg, data_root):
    cfg = copy.deepcopy(dataset_cfg)
    cfg.data_root = data_root
    return DATASETS.build(cfg)


@pytest.mark.parametrize('path', CONFIGS, ids=config_id)
def test_composition_and_data_pipelines(path, dataset_roots):
    cfg = load_config(path)
    init_default_scope(cfg.default_scope)
    classes = tuple(cfg.metainfo['classes'])
    for head in box_heads(cfg.model):
        assert head.num_classes == cfg.num_classes == len(classes)
    loss_types = [loss.type for loss in classification_losses(cfg.model)]
    if path.name.endswith('pu.py'):  # PU learning in every stage
        assert set(loss_types) <= PU_LOSSES, loss_types
    assert cfg.runner_type == 'CellRunner'
    # a checkpoint before the end: an interrupted training resumes (--resume)
    checkpoint = cfg.default_hooks.checkpoint
    assert checkpoint.type == 'ResumableCheckpointHook'
    assert min(checkpoint.interval, cfg.train_cfg.max_iters // checkpoint.per_training) \
        < cfg.train_cfg.max_iters
    train_deletion = cfg.train_dataloader.dataset.deletion
    assert train_deletion == cfg.deletion
    assert cfg.val_dataloader.dataset.deletion == train_deletion
    assert cfg.test_dataloader.dataset.get('deletion') is None  # complete test labels
    if path.parent.name == 'custom':  # a user's annotations are incomplete already
        assert train_deletion is None
    elif 'upper_bound' in path.name:
        assert train_deletion is None
        assert not set(loss_types) & PU_LOSSES  # the detector's own losses
        if 'rpn_head' in cfg.model:
            assert cfg.model.rpn_head.loss_cls.type == 'CrossEntropyLoss'
    else:
        assert train_deletion is not None
    for hook in cfg.custom_hooks:
        HOOKS.build(hook)

    data_root = dataset_roots(classes)
    train = build_dataset(cfg.train_dataloader.dataset, data_root)
    sample = train[0]
    assert sample['inputs'].shape[-2:] == (IMAGE_SIZE, IMAGE_SIZE)
    labels = sample['data_samples'].gt_instances.labels
    assert ((labels >= 0) & (labels < cfg.num_classes)).all()
    kept = [len(train.get_data_info(i)['instances']) for i in range(len(train))]
    if train_deletion is None:
        assert kept == [CELLS_PER_IMAGE] * len(train)
    elif train_deletion.type == 'KeepPerPatch':
        assert max(kept) <= train_deletion.k < CELLS_PER_IMAGE
    elif train_deletion.type == 'KeepRegion':  # the kept cells lie in one square area
        for i in range(len(train)):
            boxes = np.array([inst['bbox'] for inst in train.get_data_info(i)['instances']])
            centres = (boxes[:, :2] + boxes[:, 2:]) / 2
            assert len(centres) and np.ptp(centres, axis=0).max() <= train_deletion.size
    else:
        assert train_deletion.type == 'CapPerClass'
        for i in range(len(train)):
            labels = [inst['bbox_label'] for inst in train.get_data_info(i)['instances']]
            assert max(np.bincount(labels)) <= train_deletion.k
    for loader in ('val_dataloader', 'test_dataloader'):
        dataset = build_dataset(cfg[loader].dataset, data_root)
        packed = dataset[0]['data_samples']
        assert len(packed.gt_instances) > 0
        assert {'x0', 'y0', 'tiles'} <= set(packed.metainfo)


# ---------------------------------------------------------------- models --------------

def model_cfg_for_test(cfg):
    """The config's model with fewer proposals and RoIs sampled (CPU time only)."""
    model = copy.deepcopy(cfg.model)
    if 'rpn_proposal' in model.train_cfg:
        model.train_cfg.rpn_proposal.max_per_img = 64
    stages = model.train_cfg.get('rcnn', [])
    for stage in stages if isinstance(stages, (list, tuple)) else [stages]:
        stage.sampler.num = 32
    return model


def distinct_models():
    """(model config, configs using it) for each distinct model config.

    A config that does not compose is left out here; its composition test fails.
    """
    groups = {}
    for path in CONFIGS:
        try:
            cfg = load_config(path)
        except Exception:  # reported by test_composition_and_data_pipelines
            continue
        model = model_cfg_for_test(cfg)
        key = json.dumps(model.to_dict(), sort_keys=True)
        groups.setdefault(key, (model, []))[1].append(config_id(path))
    return list(groups.values())


MODEL_GROUPS = distinct_models()


def generated_batch(num_classes, size=128):
    generator = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (2, 3, size, size), generator=generator).float()
    samples = []
    for boxes in ([[20., 20., 52., 52.], [70., 76., 94., 100.], [90., 20., 102., 32.]],
                  [[30., 60., 54., 84.]]):
        sample = DetDataSample(metainfo=dict(
            img_shape=(size, size), ori_shape=(size, size), scale_factor=(1., 1.)))
        labels = torch.arange(len(boxes)) % num_classes
        sample.gt_instances = InstanceData(bboxes=torch.tensor(boxes), labels=labels)
        samples.append(sample)
    return dict(inputs=list(images), data_samples=samples)


@pytest.mark.parametrize('model_cfg,users', MODEL_GROUPS,
                         ids=[users[0] for _, users in MODEL_GROUPS])
def test_model_trains_one_step(model_cfg, users):
    init_default_scope('mmdet')
    torch.manual_seed(0)
    model = MODELS.build(model_cfg)
    model.init_weights()
    model.train()
    data = model.data_preprocessor(
        generated_batch(box_heads(model_cfg)[0].num_classes), training=True)
    losses = model.loss(data['inputs'], data['data_samples'])
    total, _ = model.parse_losses(losses)
    assert torch.isfinite(total), (users, losses)
    total.backward()
    if hasattr(model, 'roi_head'):
        box = model.roi_head.bbox_head
        heads = [model.rpn_head, *(box if isinstance(box, torch.nn.ModuleList) else [box])]
    else:
        heads = [model.bbox_head]
    for head in heads:
        grads = [p.grad for p in head.parameters() if p.grad is not None]
        assert grads and any(g.abs().sum() > 0 for g in grads), (users, type(head))
