"""The share of cells among the samples each classification loss of a detector sees.

A PU loss's prior pi_m is the share of class-m positives among the samples its risk
averages over (docs/method.md#priors-per-stage, docs/method.md#dense-detectors): for a
dense head the anchors or points of all levels that its assigner does not ignore, for
an RPN the anchors its sampler draws, for each RoI stage (Faster R-CNN, every stage of
Cascade R-CNN) the RoIs its sampler draws. Under incomplete labels the samples are
drawn with the labeled cells, and pi counts every true cell among them:

    pi_m = #{samples the complete labels make class-m positive} / #{samples},

summed over the images. :func:`count_positives` measures it during the detector's own
loss computation: each stage's assigner and sampler run unchanged on the training
labels (so the samples, and the random draws of the samplers, are training's), and the
stage's assigner is called a second time on the same candidates with the image's
complete cells; a sampled candidate is a class-m positive when that second assignment
makes it one. Ground-truth boxes that a sampler adds as proposals are labeled cells,
positives of their class. The RPN is class-agnostic: any cell makes a positive. A point
head without an assigner (FCOS) makes its targets itself, from regress ranges and centre
regions: its target function is called a second time in the same way, and every point
is a sample.
:func:`count_positive_sets` does the same for several cell sets at once (e.g. the
pseudo-complete cells of the label-frequency estimate and the complete ones,
:mod:`.label_frequency`), on one and the same draw of the samples.

For a dense head the samples do not depend on the labels (every location except the
ones its assigner ignores), so pi is the share of positive locations under complete
labels. Assignments that depend on the predictions (RTMDet's
``DynamicSoftLabelAssigner``; the proposals of the RPN, hence every RoI stage) need a
trained model: pass a checkpoint (a short provisional training). Assignments made from
the anchors alone (RetinaNet's ``MaxIoUAssigner``, ``ATSSAssigner``, the RPN's anchors)
do not.

:func:`positive_shares` runs this on a config's training images (``tools/positive_share.py``
is its command line).
"""
import copy
import inspect
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import torch
from mmengine.dataset import pseudo_collate
from mmengine.registry import init_default_scope
from mmengine.runner import load_checkpoint
from mmengine.structures import InstanceData
from torch import Tensor

from mmdet.models.dense_heads import FCOSHead
from mmdet.registry import DATASETS, MODELS
from mmdet.structures.bbox import get_box_tensor

#: Pipeline transforms left out when the training images are read for a measurement:
#: the labeled and the complete cells of an image are read separately and must stay in
#: the same frame. Flips change no count of positives beyond the anchor grid's alignment.
RANDOM_FLIPS = ('RandomFlip', )


class PositiveShare(NamedTuple):
    """What one classification loss saw over the measured images.

    Attributes:
        positives: per class, the samples the complete labels make positives of it.
        total: the samples the loss saw (positives and negatives).
        labeled: per class, the samples the training labels make positives of it (the
            labeled positives P).
    """
    positives: Tuple[int, ...]
    total: int
    labeled: Tuple[int, ...] = ()

    @property
    def shares(self) -> Tuple[float, ...]:
        """pi_m = positives_m / total, per class."""
        return tuple(count / self.total if self.total else 0.0
                     for count in self.positives)


class _Stage:
    """The counts of one classification loss over the measured images. Each kind
    (:class:`_AssignerStage`, :class:`_PointTargetStage`) routes the calls that make the
    loss's training targets through itself while patched (``patch``, ``unpatch``)."""

    def __init__(self, key: str, num_classes: int) -> None:
        self.key = key
        self.num_classes = num_classes
        self.positives: Optional[Tensor] = None  # (K cell sets, C)
        self.labeled = torch.zeros(num_classes, dtype=torch.long)
        self.total = 0
        self.cell_sets: Sequence[Sequence[InstanceData]] = ()
        self.image = 0

    def start_batch(self, cell_sets: Sequence[Sequence[InstanceData]]) -> None:
        if self.positives is None:
            self.positives = torch.zeros(len(cell_sets[0]), self.num_classes,
                                         dtype=torch.long)
        if any(len(sets) != len(self.positives) for sets in cell_sets):
            raise ValueError(f'expected {len(self.positives)} cell set(s) per image, got '
                             f'{[len(sets) for sets in cell_sets]}')
        self.cell_sets, self.image = cell_sets, 0

    def end_batch(self) -> None:
        if self.image != len(self.cell_sets):
            raise RuntimeError(
                f'{self.key}: the targets were made for {self.image} image(s) of a batch '
                f'of {len(self.cell_sets)}; expected once per image')

    def next_image_sets(self, labeled: InstanceData) -> List[InstanceData]:
        """The cell sets of the next image of the batch, in the frame, device and class
        mapping of its training labels ``labeled``."""
        if self.image >= len(self.cell_sets):
            raise RuntimeError(f'{self.key}: the targets were made more than once per '
                               f'image')
        sets = self.cell_sets[self.image]
        self.image += 1
        truths = []
        for truth in sets:
            _check_labeled_among_truth(labeled, truth, self.key)
            truths.append(InstanceData(
                bboxes=truth.bboxes.to(labeled.bboxes.device),
                labels=self._classes(truth.labels).to(labeled.labels.device)))
        return truths

    def _classes(self, labels: Tensor) -> Tensor:
        """A cell's class for this stage: its label, or 0 in a class-agnostic stage."""
        return torch.zeros_like(labels) if self.num_classes == 1 else labels

    def shares(self) -> List[PositiveShare]:
        """One :class:`PositiveShare` per cell set."""
        labeled = tuple(int(n) for n in self.labeled)
        return [PositiveShare(tuple(int(n) for n in positives), self.total, labeled)
                for positives in self.positives]


class _AssignerStage(_Stage):
    """One assigner + sampler pair and the loss whose samples they draw."""

    def __init__(self, key: str, assigner, sampler, num_classes: int) -> None:
        super().__init__(key, num_classes)
        self.assigner = assigner
        self.sampler = sampler
        self.pending: List[Tensor] = []

    def assign(self, original, signature, *args, **kwargs):
        """The training assignment; also stores, per cell set, the class each candidate
        is assigned with that set (-1 for none)."""
        result = original(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        if 'gt_instances' not in bound.arguments:
            raise ValueError(f'{self.key}: {type(self.assigner).__name__}.assign takes no '
                             f'gt_instances argument')
        self.pending = []
        for truth in self.next_image_sets(bound.arguments['gt_instances']):
            bound.arguments['gt_instances'] = truth
            complete = original(*bound.args, **bound.kwargs)
            classes = complete.gt_inds.new_full(complete.gt_inds.shape, -1)
            positive = complete.gt_inds > 0
            classes[positive] = truth.labels[complete.gt_inds[positive] - 1]
            self.pending.append(classes)
        return result

    def sample(self, original, assign_result, pred_instances, gt_instances, *args,
               **kwargs):
        """The training samples; counts the labeled positives and, per cell set, the
        true positives among them."""
        before = assign_result.num_preds
        result = original(assign_result, pred_instances, gt_instances, *args, **kwargs)
        if not self.pending:
            raise RuntimeError(f'{self.key}: the sampler ran without an assignment')
        added = assign_result.num_preds - before  # labeled cells added as proposals
        sampled_inds = torch.cat([result.pos_inds, result.neg_inds])
        for k, classes in enumerate(self.pending):
            if added:
                added_classes = self._classes(gt_instances.labels[:added]).to(classes)
                classes = torch.cat([added_classes, classes])
            sampled = classes[sampled_inds]
            found = sampled[sampled >= 0].cpu()
            self.positives[k] += torch.bincount(found, minlength=self.num_classes)
        self.pending = []
        labeled = self._classes(result.pos_gt_labels.long()).cpu()
        self.labeled += torch.bincount(labeled, minlength=self.num_classes)
        self.total += sampled_inds.numel()
        return result

    def patch(self) -> None:
        assign, sample = self.assigner.assign, self.sampler.sample
        signature = inspect.signature(assign)
        self.assigner.assign = (
            lambda *a, _f=assign, _g=signature, **k: self.assign(_f, _g, *a, **k))
        self.sampler.sample = lambda *a, _f=sample, **k: self.sample(_f, *a, **k)

    def unpatch(self) -> None:
        for obj, attr in ((self.assigner, 'assign'), (self.sampler, 'sample')):
            obj.__dict__.pop(attr, None)


class _PointTargetStage(_Stage):
    """A point head whose targets its own ``_get_targets_single`` makes, without an
    assigner or a sampler (FCOS: a location is a cell's positive when it lies in the
    cell's centre region and its largest distance to the box's sides is in its level's
    regress range). Every location is a sample; a label of ``num_classes`` is
    background."""

    def __init__(self, key: str, head) -> None:
        super().__init__(key, head.num_classes)
        self.head = head

    def targets(self, original, gt_instances: InstanceData, *args, **kwargs):
        """The training targets of one image; counts its locations, the labeled
        positives and, per cell set, the positives that set makes."""
        result = original(gt_instances, *args, **kwargs)
        for k, truth in enumerate(self.next_image_sets(gt_instances)):
            labels = original(truth, *args, **kwargs)[0]
            self.positives[k] += self._count(labels)
        self.labeled += self._count(result[0])
        self.total += result[0].numel()
        return result

    def _count(self, labels: Tensor) -> Tensor:
        found = labels[(labels >= 0) & (labels < self.num_classes)].long().cpu()
        return torch.bincount(found, minlength=self.num_classes)

    def patch(self) -> None:
        original = self.head._get_targets_single
        self.head._get_targets_single = (
            lambda *a, _f=original, **k: self.targets(_f, *a, **k))

    def unpatch(self) -> None:
        self.head.__dict__.pop('_get_targets_single', None)


def _check_labeled_among_truth(labeled: InstanceData, truth: InstanceData, key: str):
    """Every labeled cell must be a complete cell of the same image."""
    boxes = get_box_tensor(labeled.bboxes)
    if not len(boxes):
        return
    truth_boxes = truth.bboxes.to(boxes)
    if not len(truth_boxes) or not bool(
            (torch.cdist(boxes, truth_boxes, p=1).min(dim=1).values < 1e-3).all()):
        raise ValueError(
            f'{key}: a labeled cell is not among the complete cells of its image; the '
            f'complete cells must be given per image, in the batch order, in the frame '
            f'of the training input (same flips and scale)')


def _stages(model) -> List[_Stage]:
    """Every classification loss of ``model`` whose targets can be counted, with its
    config key.

    Dense heads and RPNs hold ``assigner``, ``sampler`` and ``loss_cls``; RoI heads hold
    ``bbox_assigner`` and ``bbox_sampler`` (one per stage in a cascade); FCOS heads make
    their targets themselves, without an assigner.
    """
    stages = []
    for name, module in model.named_modules():
        prefix = f'model.{name}' if name else 'model'
        if all(hasattr(module, key) for key in ('assigner', 'sampler', 'loss_cls')):
            stages.append(_AssignerStage(f'{prefix}.loss_cls', module.assigner,
                                         module.sampler, module.num_classes))
        elif isinstance(module, FCOSHead):
            stages.append(_PointTargetStage(f'{prefix}.loss_cls', module))
        assigner = getattr(module, 'bbox_assigner', None)
        if assigner is None:
            continue
        if isinstance(assigner, (list, tuple)):
            for i, (stage_assigner, sampler) in enumerate(
                    zip(assigner, module.bbox_sampler)):
                stages.append(_AssignerStage(f'{prefix}.bbox_head.{i}.loss_cls',
                                             stage_assigner, sampler,
                                             module.bbox_head[i].num_classes))
        else:
            stages.append(_AssignerStage(f'{prefix}.bbox_head.loss_cls', assigner,
                                         module.bbox_sampler, module.bbox_head.num_classes))
    return stages


class _Patched:
    """Routes the calls that make the stages' targets through them while active."""

    def __init__(self, stages: List[_Stage]) -> None:
        self.stages = stages

    def __enter__(self):
        for stage in self.stages:
            stage.patch()
        return self

    def __exit__(self, *exc):
        for stage in self.stages:
            stage.unpatch()
        return False


def count_positives(model, batches: Iterable[Tuple[dict, Sequence[InstanceData]]]
                    ) -> Dict[str, PositiveShare]:
    """Positives per class and samples of every classification loss of ``model``.

    Runs the model's training loss (train mode, no gradients) on each batch and counts,
    for each stage, the samples it draws and the true positives among them (module
    doc).

    Args:
        model: an mmdet detector built with its ``train_cfg``.
        batches: pairs ``(data, truths)``: ``data`` as the model's
            ``data_preprocessor`` takes it (``inputs`` and ``data_samples`` with the
            training labels), ``truths`` the complete cells of each image of the batch
            (``InstanceData`` with ``bboxes`` (K, 4) and ``labels`` (K,)), in the frame
            of the training input.

    Returns:
        dict: config key of each loss (``model.bbox_head.loss_cls``,
        ``model.rpn_head.loss_cls``, ``model.roi_head.bbox_head[.<i>].loss_cls``) to its
        :class:`PositiveShare`.

    Raises:
        ValueError: the model has no head whose targets can be counted (an assigner +
            sampler pair, or FCOS's regress ranges), or a labeled cell is not among its
            image's complete cells.
    """
    counts = count_positive_sets(
        model, ((data, [[truth] for truth in truths]) for data, truths in batches))
    return {key: shares[0] for key, shares in counts.items()}


def count_positive_sets(model, batches: Iterable[Tuple[dict, Sequence[Sequence[InstanceData]]]]
                        ) -> Dict[str, List[PositiveShare]]:
    """:func:`count_positives` with several cell sets per image, counted on one draw of
    the samples: ``batches`` yields ``(data, cell_sets)``, ``cell_sets`` holding per image
    the same number K of cell sets (each holding the image's labeled cells); returns per
    loss K :class:`PositiveShare`, in the order of the sets."""
    stages = _stages(model)
    if not stages:
        raise ValueError(f'{type(model).__name__}: no head with an assigner and a sampler '
                         f'or regress ranges (build the model with its train_cfg)')
    was_training = model.training
    model.train()
    try:
        with _Patched(stages), torch.no_grad():
            for data, cell_sets in batches:
                if len(cell_sets) != len(data['inputs']):
                    raise ValueError(f'expected the complete cells of each of the '
                                     f'{len(data["inputs"])} images, got {len(cell_sets)}')
                data = model.data_preprocessor(data, True)
                for stage in stages:
                    stage.start_batch(cell_sets)
                model.loss(data['inputs'], data['data_samples'])
                for stage in stages:
                    stage.end_batch()
    finally:
        model.train(was_training)
    if stages[0].positives is None:
        raise ValueError('no batch to count on')
    return {stage.key: stage.shares() for stage in stages}


def _measurement_dataset_cfg(dataset_cfg, deletion, config_file):
    cfg = copy.deepcopy(dataset_cfg)
    pipeline = [t for t in cfg.get('pipeline', []) if t.get('type') not in RANDOM_FLIPS]
    random = [t.get('type') for t in pipeline if 'Random' in str(t.get('type'))
              or 'Mosaic' in str(t.get('type')) or 'MixUp' in str(t.get('type'))]
    if random:
        raise ValueError(f'{config_file}: train_dataloader.dataset.pipeline has random '
                         f'transforms {random} besides flips; the labeled and complete '
                         f'cells of an image would not share one frame')
    cfg.pipeline = pipeline
    cfg.deletion = deletion
    return cfg


def training_batches(cfg, num_images: Optional[int] = None,
                     batch_size: Optional[int] = None, seed: int = 0,
                     config_file: str = 'config'):
    """``(data, truths)`` batches of the config's training images for
    :func:`count_positives`.

    The training dataset is read twice, with the config's ``deletion`` (the training
    labels) and without (the complete cells), through the training pipeline without
    its flips. ``num_images`` images (all by default) are drawn at random (``seed``)
    and batched by ``batch_size`` (the training loader's by default).

    Args:
        cfg: the experiment config (top-level ``deletion`` and ``train_dataloader``).
        num_images: how many training images to measure, None for all.
        batch_size: images per batch; the config's training batch size if None.
        seed: seed of the image draw.
        config_file: name for error messages.

    Yields:
        tuple: ``(data, truths)``.
    """
    dataset_cfg = cfg.train_dataloader.dataset
    if 'deletion' not in cfg:
        raise ValueError(f'{config_file}: no top-level deletion key (None for complete '
                         f'labels); the measurement reads the training labels from it')
    labeled = DATASETS.build(
        _measurement_dataset_cfg(dataset_cfg, cfg.deletion, config_file))
    complete = DATASETS.build(_measurement_dataset_cfg(dataset_cfg, None, config_file))
    if len(labeled) != len(complete):
        raise ValueError(f'{config_file}: the training set has {len(labeled)} images with '
                         f'the deletion and {len(complete)} without')
    order = np.random.default_rng(seed).permutation(len(labeled))
    if num_images is not None:
        order = order[:num_images]
    batch_size = batch_size or cfg.train_dataloader.batch_size
    for start in range(0, len(order), batch_size):
        indices = order[start:start + batch_size]
        data = pseudo_collate([labeled[int(i)] for i in indices])
        truths = []
        for i, sample in zip(indices, data['data_samples']):
            whole = complete[int(i)]['data_samples']
            if whole.img_path != sample.img_path:
                raise ValueError(f'{config_file}: image {int(i)} is {sample.img_path} with '
                                 f'the deletion and {whole.img_path} without')
            cells = whole.gt_instances
            truths.append(InstanceData(bboxes=get_box_tensor(cells.bboxes).float(),
                                       labels=cells.labels))
        yield data, truths


def positive_shares(cfg, checkpoint: Optional[str] = None,
                    num_images: Optional[int] = None, batch_size: Optional[int] = None,
                    seed: int = 0, device: str = 'cpu',
                    config_file: str = 'config') -> Dict[str, PositiveShare]:
    """:func:`count_positives` of the config's model on its training images.

    Args:
        cfg: the experiment config, after ``apply_deletion`` or not (the top-level
            ``deletion`` is read).
        checkpoint: weights to load (needed where assignments depend on predictions,
            module doc); random initialisation if None.
        num_images, batch_size, seed: see :func:`training_batches`; ``seed`` also
            seeds torch (the samplers' draws).
        device: where the model runs.
        config_file: name for error messages.

    Returns:
        dict: see :func:`count_positives`.
    """
    init_default_scope(cfg.get('default_scope', 'mmdet'))
    torch.manual_seed(seed)
    model = MODELS.build(cfg.model)
    model.init_weights()
    if checkpoint is not None:
        load_checkpoint(model, checkpoint, map_location='cpu')
    model.to(device)
    return count_positives(
        model, training_batches(cfg, num_images, batch_size, seed, config_file))
