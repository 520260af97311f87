"""The share of cells among the samples of each classification loss
(mmdet_pu/prior/positive_share.py)."""
import copy

import pytest
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmengine.structures import InstanceData

import mmdet_pu  # noqa: F401
from mmdet.registry import MODELS
from mmdet.structures import DetDataSample
from mmdet_pu.prior.positive_share import count_positives, training_batches
from tests._data import REPO, make_tiny_coco
from tests.models._dense_detectors import data_samples

MODEL_BASES = REPO / 'configs' / '_base_' / 'models'


def base_model(name, num_classes, **options):
    """A shipped model base with ``num_classes`` in every box head and ``options``
    (``--cfg-options`` style keys below ``model``)."""
    cfg = Config.fromfile(str(MODEL_BASES / name))
    cfg.merge_from_dict({f'model.{key}': value for key, value in options.items()})
    model = copy.deepcopy(cfg.model)
    heads = model.roi_head.bbox_head if 'roi_head' in model else model.bbox_head
    for head in heads if isinstance(heads, list) else [heads]:
        head.num_classes = num_classes
    init_default_scope('mmdet')
    torch.manual_seed(0)
    detector = MODELS.build(model)
    detector.init_weights()
    return detector


def samples(cells, size=64):
    """Data samples of ``size`` px images holding ``cells``: (boxes, labels) per image."""
    out = []
    for boxes, labels in cells:
        sample = DetDataSample(metainfo=dict(img_shape=(size, size), ori_shape=(size, size),
                                             scale_factor=(1.0, 1.0)))
        sample.gt_instances = InstanceData(bboxes=torch.tensor(boxes, dtype=torch.float32),
                                           labels=torch.tensor(labels))
        out.append(sample)
    return out


def one_batch(labeled, complete, size=64):
    gen = torch.Generator().manual_seed(0)
    inputs = [torch.randint(0, 256, (3, size, size), dtype=torch.uint8, generator=gen)
              for _ in labeled]
    truths = [sample.gt_instances for sample in samples(complete, size)]
    return [(dict(inputs=inputs, data_samples=samples(labeled, size)), truths)]


# Cells that are exactly one anchor of the stride-16 level when every anchor is a
# stride x stride square: IoU 1 with it and at most 0.25 with every other anchor.
CELLS = [[8., 8., 24., 24.], [40., 8., 56., 24.], [8., 40., 24., 56.]]
SECOND_IMAGE = [[24., 24., 40., 40.]]
SQUARE_ANCHORS = dict(octave_base_scale=1, scales_per_octave=1, ratios=[1.0])
STRIDES = (4, 8, 16, 32, 64)


def anchors_per_image(size):
    """One anchor per location of every level of a ``size`` px image."""
    return sum((size // stride) ** 2 for stride in STRIDES)


@pytest.mark.parametrize('num_classes,labels,expected,labeled_positives', [
    (1, ([0, 0, 0], [0]), (4, ), (2, )),
    (2, ([0, 1, 1], [1]), (1, 3), (1, 1)),
])
def test_a_dense_head_counts_the_unlabeled_cells_among_its_locations(
        num_classes, labels, expected, labeled_positives):
    model = base_model('retinanet_r18-slim_fpn.py', num_classes,
                       **{f'bbox_head.anchor_generator.{key}': value
                          for key, value in SQUARE_ANCHORS.items()})
    labeled = [(CELLS[:1], labels[0][:1]), (SECOND_IMAGE, labels[1])]
    complete = [(CELLS, labels[0]), (SECOND_IMAGE, labels[1])]
    shares = count_positives(model, one_batch(labeled, complete))
    assert list(shares) == ['model.bbox_head.loss_cls']
    result = shares['model.bbox_head.loss_cls']
    # every anchor is a sample (none ignored); one positive anchor per cell, labeled or not
    assert result.total == 2 * anchors_per_image(64)
    assert result.positives == expected
    assert result.labeled == labeled_positives  # the labeled cells' anchors
    assert result.shares == tuple(n / (2 * anchors_per_image(64)) for n in expected)


def test_an_rpn_counts_the_unlabeled_cells_among_its_sampled_anchors():
    # stride x stride anchors; the sampler draws every anchor of an image
    model = base_model('faster-rcnn_r18-slim_fpn.py', 2,
                       **{'rpn_head.anchor_generator.scales': [1],
                          'train_cfg.rpn.sampler.num': anchors_per_image(128),
                          'train_cfg.rpn.sampler.pos_fraction': 1.0})
    labeled = [(CELLS[:1], [1]), (SECOND_IMAGE, [0])]
    complete = [(CELLS, [1, 0, 1]), (SECOND_IMAGE, [0])]
    # 128 px: mmdet's RPN cannot decode a level of a single anchor
    result = count_positives(model, one_batch(labeled, complete, size=128))
    result = result['model.rpn_head.loss_cls']
    assert result.total == 2 * anchors_per_image(128)
    assert result.positives == (4, )  # class-agnostic


def record_loss_targets(model):
    """Hooks counting, per loss, the positive targets (labels < C) and the samples with
    a non-zero weight in every call of each ``loss_cls``: what the loss itself sees."""
    counts = {}
    for name, module in model.named_modules():
        loss = getattr(module, 'loss_cls', None)
        if not isinstance(loss, torch.nn.Module) or not hasattr(module, 'num_classes'):
            continue
        key, num_classes = f'model.{name}.loss_cls', module.num_classes
        counts[key] = [torch.zeros(num_classes, dtype=torch.long), 0]

        def hook(_, args, kwargs, key=key, num_classes=num_classes):
            target = args[1] if len(args) > 1 else kwargs['target']
            labels = target[0] if isinstance(target, (tuple, list)) else target
            weight = args[2] if len(args) > 2 else kwargs.get('weight')
            seen = torch.ones_like(labels, dtype=torch.bool) if weight is None \
                else weight.reshape(-1) > 0
            labels = labels.reshape(-1)[seen]
            counts[key][0] += torch.bincount(labels[labels < num_classes],
                                             minlength=num_classes)
            counts[key][1] += int(seen.sum())
        loss.register_forward_pre_hook(hook, with_kwargs=True)
    return counts


@pytest.mark.parametrize('base', ['retinanet_r18-slim_fpn.py', 'atss_r18-slim_fpn.py',
                                  'fcos_r18-slim_fpn.py', 'rtmdet_tiny.py',
                                  'faster-rcnn_r18-slim_fpn.py',
                                  'cascade-rcnn_r18-slim_fpn.py'])
def test_with_complete_labels_the_counts_are_the_losses_own(base):
    """Labeled = complete: every loss's samples and positive targets, as the loss sees
    them, whatever the stage (dense head, RPN, each cascade stage)."""
    model = base_model(base, 2)
    counts = record_loss_targets(model)
    labeled = data_samples(2, 2, 128, seed=0)
    gen = torch.Generator().manual_seed(0)
    inputs = [torch.randint(0, 256, (3, 128, 128), dtype=torch.uint8, generator=gen)
              for _ in labeled]
    truths = [copy.deepcopy(sample.gt_instances) for sample in labeled]
    shares = count_positives(model, [(dict(inputs=inputs, data_samples=labeled), truths)])
    assert set(shares) == set(counts)
    for key, result in shares.items():
        positives, total = counts[key]
        assert result.total == total > 0, key
        assert result.positives == tuple(positives.tolist()), key
        assert result.labeled == result.positives, key
        assert sum(result.positives) > 0, key


def test_fcos_counts_the_unlabeled_cells_among_its_points():
    """FCOS has no assigner: its own target function runs again with the complete
    cells. Every point is a sample; the positives are those its loss sees when trained
    on the complete labels, the labeled ones those it sees on the training labels."""
    key = 'model.bbox_head.loss_cls'
    labeled = [(CELLS[:1], [1]), (SECOND_IMAGE, [0])]
    complete = [(CELLS, [1, 0, 1]), (SECOND_IMAGE, [0])]
    runs = {}
    for name, cells in (('partial', labeled), ('whole', complete)):
        model = base_model('fcos_r18-slim_fpn.py', 2)
        own = record_loss_targets(model)[key]
        runs[name] = count_positives(model, one_batch(cells, complete))[key], own
    (partial, own), (whole, whole_own) = runs['partial'], runs['whole']
    assert partial.total == whole.total == whole_own[1] == 2 * anchors_per_image(64)
    assert partial.positives == whole.positives == tuple(whole_own[0].tolist())
    assert partial.labeled == tuple(own[0].tolist())
    assert 0 < sum(partial.labeled) < sum(partial.positives)
    assert all(n > 0 for n in partial.positives)


def test_a_labeled_cell_must_be_one_of_its_images_complete_cells():
    model = base_model('retinanet_r18-slim_fpn.py', 1)
    labeled = [(CELLS[:1], [0]), (SECOND_IMAGE, [0])]
    swapped = [(SECOND_IMAGE, [0]), (CELLS, [0, 0, 0])]
    with pytest.raises(ValueError, match='not among the complete cells'):
        count_positives(model, one_batch(labeled, swapped))


def test_a_model_without_an_assigner_is_refused():
    model = base_model('retinanet_r18-slim_fpn.py', 1)
    del model.bbox_head.assigner
    with pytest.raises(ValueError, match='no head with an assigner'):
        count_positives(model, [])


def tiny_config(root, pipeline_extra=()):
    ann_file = make_tiny_coco(root, n_images=3, size=96, cells_per_image=5)
    pipeline = [dict(type='LoadImageFromFile'), dict(type='LoadAnnotations', with_bbox=True),
                dict(type='RandomFlip', prob=1.0), *pipeline_extra,
                dict(type='PackDetInputs')]
    return Config(dict(
        deletion=dict(type='KeepPerPatch', k=1, seed=0),
        train_dataloader=dict(batch_size=2, dataset=dict(
            type='CellCocoDataset', data_root=str(root) + '/', ann_file=ann_file,
            data_prefix=dict(img='images/'), metainfo=dict(classes=('cell0', )),
            filter_cfg=dict(filter_empty_gt=False), pipeline=pipeline))))


def test_training_batches_pair_the_labeled_with_the_complete_cells(tmp_path):
    init_default_scope('mmdet')
    batches = list(training_batches(tiny_config(tmp_path)))
    assert [len(truths) for _, truths in batches] == [2, 1]
    for data, truths in batches:
        for sample, truth in zip(data['data_samples'], truths):
            assert len(sample.gt_instances) == 1 and len(truth) == 5
            # same frame: the flip is left out of both, so the labeled box is a cell
            box = sample.gt_instances.bboxes.tensor
            assert (torch.cdist(box, truth.bboxes, p=1).min() < 1e-4)


def test_training_batches_refuse_other_random_transforms(tmp_path):
    init_default_scope('mmdet')
    cfg = tiny_config(tmp_path, [dict(type='RandomCrop', crop_size=(64, 64))])
    with pytest.raises(ValueError, match='RandomCrop'):
        next(training_batches(cfg))
