"""The samples each PU stage draws in training, for the prior estimators.

For one batch of incompletely annotated images, :func:`sample_stages` runs a two-stage
detector (eval mode, no gradients) and reproduces what training samples:

* **RPN**: the anchors of the RPN's prior generator for the image size (valid and, with
  ``train_cfg.rpn.allowed_border``, inside the image), assigned to the labeled cells and
  sampled by the config's ``train_cfg.rpn`` assigner and sampler, as
  ``AnchorHead.get_targets`` does (class-agnostic: every cell is a positive).
* **RoI head**: the proposals of ``model.train_cfg.rpn_proposal`` (the training
  proposals), assigned and sampled by ``train_cfg.rcnn`` with the labeled cells (and
  their own boxes added to the proposals when the sampler adds them), as
  ``StandardRoIHead.loss`` does, then scored by the RoI head (class probabilities, the
  activation the head uses at test time, and the background cross entropy the PU
  losses sum).

Each sampled sample is then assigned again, by the same assigner on the same candidates,
with the pseudo-complete cells (labeled cells + the detector's own detections with
``score >= score_thr`` after the test NMS, :func:`~.estimation.pseudo_complete`)
and, when given, with the complete cells: the positives of those assignments are the
true positives the estimators count (:mod:`.estimation`). Samplers draw at random
(``torch`` RNG): seed it for repeatable estimates.

:func:`draw_split` does this over the images of a config's split, loaded through the
validation pipeline (no random transforms) with the split's deletion applied as its
loader does; with ``complete`` also the complete annotations of the same images.
"""
from typing import List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from mmengine.dataset import pseudo_collate
from mmengine.registry import init_default_scope
from mmengine.runner import load_checkpoint
from mmengine.structures import InstanceData
from torch import Tensor

from mmdet.models.task_modules.prior_generators import anchor_inside_flags
from mmdet.models.utils import unpack_gt_instances
from mmdet.registry import DATASETS, MODELS
from mmdet.structures.bbox import bbox2roi, get_box_tensor

from mmdet_pu.models.losses.pu_loss import cross_entropy_terms
from .estimation import ImageSamples, pseudo_complete
from .keys import type_name


def resolve_device(device: Optional[str]) -> str:
    """``device``, or ``'cuda'`` when available and ``'cpu'`` otherwise for None."""
    return device or ('cuda' if torch.cuda.is_available() else 'cpu')


def load_detector_and_split(cfg, config: str, checkpoint: str, split: str, oracle: bool,
                            device: str):
    """``(model, dataset, complete)``: the detector of ``checkpoint`` in eval mode on
    ``device``, the ``split`` of ``cfg`` (:func:`split_dataset_config`, the config's
    deletion applied) and, with ``oracle``, the same images with their complete labels
    (else None)."""
    init_default_scope(cfg.get('default_scope', 'mmdet'))
    dataset_cfg = split_dataset_config(cfg, split, config_file=config)
    complete_cfg = split_dataset_config(cfg, split, complete=True,
                                        config_file=config) if oracle else None
    model = MODELS.build(cfg.model)
    load_checkpoint(model, checkpoint, map_location='cpu')
    dataset = DATASETS.build(dataset_cfg)
    complete = DATASETS.build(complete_cfg) if complete_cfg is not None else None
    return model.to(device).eval(), dataset, complete


def _cells(instances: InstanceData):
    """``(bboxes (M, 4) tensor, labels (M,) long tensor)`` of ground-truth instances."""
    return get_box_tensor(instances.bboxes).float(), instances.labels.long()


def class_counts(labels: Tensor, num_classes: int) -> np.ndarray:
    """(C,) how many of ``labels`` are of each class."""
    return np.bincount(labels.long().cpu().numpy(), minlength=num_classes)[:num_classes]


def pseudo_complete_cells(labeled: InstanceData, detections: InstanceData,
                          score_thr: float = 0.5) -> InstanceData:
    """The pseudo-complete cells of one image: the labeled cells plus the detections
    with ``score >= score_thr`` that are none of them (:func:`~.estimation.pseudo_complete`),
    labeled cells first, as ``bboxes`` (M, 4) float and ``labels`` (M,) long tensors on
    the labeled cells' device.

    Args:
        labeled: the labeled cells (``bboxes``, ``labels``).
        detections: the detector's detections after its test NMS (``bboxes``,
            ``labels``, ``scores``), in the frame of the labeled cells.
        score_thr: detections with a lower score are left out.
    """
    bboxes, labels = _cells(labeled)
    kept = detections.scores >= score_thr
    cells, cell_labels, _ = pseudo_complete(
        bboxes.cpu().numpy(), labels.cpu().numpy(),
        get_box_tensor(detections.bboxes)[kept].cpu().numpy(),
        detections.labels[kept].cpu().numpy())
    return InstanceData(bboxes=bboxes.new_tensor(cells), labels=labels.new_tensor(cell_labels))


def assigned_classes(assigner, candidates: Tensor, bboxes: Tensor,
                     labels: Tensor) -> Tensor:
    """Class of the cell each candidate box is assigned to, -1 for none (or ignored).

    Args:
        assigner: an mmdet assigner (e.g. ``MaxIoUAssigner``).
        candidates: (N, 4) boxes to assign (anchors or proposals).
        bboxes, labels: (M, 4) cells and their (M,) classes.
    """
    classes = candidates.new_full((len(candidates), ), -1, dtype=torch.long)
    if not len(bboxes) or not len(candidates):
        return classes
    result = assigner.assign(InstanceData(priors=candidates),
                             InstanceData(bboxes=bboxes, labels=labels))
    positive = result.gt_inds > 0
    classes[positive] = labels[result.gt_inds[positive] - 1]
    return classes


@torch.no_grad()
def rpn_samples(rpn_head, anchors: Tensor, valid_flags: Tensor, img_meta: dict,
                labeled: InstanceData, ignored: Optional[InstanceData],
                truths: Sequence[Optional[InstanceData]]) -> List[Optional[np.ndarray]]:
    """Anchors the RPN samples on one image, as ``AnchorHead._get_targets_single``.

    Args:
        rpn_head: the detector's RPN head (with its ``assigner`` and ``sampler``).
        anchors, valid_flags: (A, 4) anchors of all levels and their valid flags.
        img_meta: the image's meta information (``img_shape``).
        labeled: the labeled cells.
        ignored: ignored cells (or None).
        truths: further cell sets (pseudo-complete, complete; None entries are skipped).

    Returns:
        list: ``[labeled, *truths]`` as (S,) bool arrays over the S sampled anchors:
        whether the anchor is positive with those cells (None for a None truth).
    """
    inside = anchor_inside_flags(anchors, valid_flags, img_meta['img_shape'][:2],
                                 rpn_head.train_cfg['allowed_border'])
    candidates = anchors[inside]
    bboxes, labels = _cells(labeled)
    agnostic = InstanceData(bboxes=bboxes, labels=torch.zeros_like(labels))
    pred = InstanceData(priors=candidates)
    assign_result = rpn_head.assigner.assign(pred, agnostic, ignored)
    sampling = rpn_head.sampler.sample(assign_result, pred, agnostic)
    sampled = torch.cat([sampling.pos_inds, sampling.neg_inds])
    flags = [(torch.arange(len(sampled)) < len(sampling.pos_inds)).numpy()]
    for truth in truths:
        if truth is None:
            flags.append(None)
            continue
        bboxes, labels = _cells(truth)
        classes = assigned_classes(rpn_head.assigner, candidates, bboxes,
                                   torch.zeros_like(labels))
        flags.append((classes[sampled] >= 0).cpu().numpy())
    return flags


@torch.no_grad()
def roi_samples(roi_head, feats: Sequence[Tensor], proposals: InstanceData,
                labeled: InstanceData, ignored: Optional[InstanceData],
                truths: Sequence[Optional[InstanceData]]):
    """RoIs the RoI head samples on one image, as ``StandardRoIHead.loss``, and scores.

    Args:
        roi_head: the detector's RoI head (``bbox_assigner``, ``bbox_sampler``).
        feats: the image's multi-level features, each (1, C, H, W).
        proposals: training proposals (``bboxes``).
        labeled, ignored: the labeled and ignored cells.
        truths: further cell sets (None entries are skipped).

    Returns:
        tuple: ``(labels, is_gt, scores, bg_ce, truth_classes)`` over the K sampled RoIs:
        (K,) class of the labeled cell of a positive, -1 for unlabeled; (K,) bool, the
        RoI is a labeled cell's own box; (K, C) class probabilities; (K,) the background
        cross entropy ``H(c, bg)`` of the PU losses (their ``cross_entropy_terms``; None
        for a head without a background logit); per truth the (K,) assigned classes (-1 for
        none; None for a None truth).
    """
    priors = get_box_tensor(proposals.bboxes)
    pred = InstanceData(priors=priors)
    bboxes, labels = _cells(labeled)
    gt = InstanceData(bboxes=bboxes, labels=labels)
    assign_result = roi_head.bbox_assigner.assign(pred, gt, ignored)
    sampler = roi_head.bbox_sampler
    sampling = sampler.sample(assign_result, pred, gt)
    # the sampler's candidates: the labeled boxes first when it adds them
    if getattr(sampler, 'add_gt_as_proposals', False) and len(bboxes):
        candidates = torch.cat([bboxes, priors])
    else:
        candidates = priors
    sampled = torch.cat([sampling.pos_inds, sampling.neg_inds])
    sampled_labels = torch.cat([sampling.pos_gt_labels.long(),
                                sampled.new_full((len(sampling.neg_inds), ), -1)])
    is_gt = torch.cat([sampling.pos_is_gt.bool(),
                       sampled.new_zeros(len(sampling.neg_inds), dtype=torch.bool)])

    head = roi_head.bbox_head
    cls_score = roi_head._bbox_forward(feats, bbox2roi([candidates[sampled]]))['cls_score']
    probs = (head.loss_cls.get_activation(cls_score) if head.custom_cls_channels
             else F.softmax(cls_score, dim=-1))
    bg_ce = None
    if cls_score.shape[1] == head.num_classes + 1:  # softmax with a background logit
        loss_labels = torch.where(sampled_labels >= 0, sampled_labels, head.num_classes)
        bg_ce = cross_entropy_terms(cls_score.float(), loss_labels,
                                    use_sigmoid=False)[1].cpu().numpy()
    truth_classes = []
    for truth in truths:
        if truth is None:
            truth_classes.append(None)
            continue
        bboxes, labels = _cells(truth)
        classes = assigned_classes(roi_head.bbox_assigner, candidates, bboxes, labels)
        truth_classes.append(classes[sampled].cpu().numpy())
    return (sampled_labels.cpu().numpy(), is_gt.cpu().numpy(),
            probs[:, :head.num_classes].float().cpu().numpy(), bg_ce, truth_classes)


@torch.no_grad()
def sample_stages(model, data_batch: dict, score_thr: float = 0.5,
                  complete: Optional[Sequence[InstanceData]] = None) -> List[ImageSamples]:
    """:class:`~.estimation.ImageSamples` of every image of ``data_batch``.

    Args:
        model: a two-stage detector with an RPN, built with ``train_cfg`` (its assigners
            and samplers), in eval mode.
        data_batch: a collated batch of the data loader (labeled cells as
            ``gt_instances``); the model's data preprocessor is applied here.
        score_thr: detections with a lower score are not pseudo-complete cells.
        complete: per image, the complete cells (``bboxes``, ``labels``) for the oracle.
    """
    if not getattr(model, 'with_rpn', False) or model.train_cfg is None:
        raise ValueError('prior estimation needs a two-stage detector with an RPN, built '
                         'with model.train_cfg (its rpn / rcnn assigners and samplers)')
    data = model.data_preprocessor(data_batch, False)
    samples = data['data_samples']
    metas = [sample.metainfo for sample in samples]
    gts, gts_ignored, _ = unpack_gt_instances(samples)
    if complete is not None and len(complete) != len(samples):
        raise ValueError(f'{len(complete)} complete annotations for {len(samples)} images')
    num_classes = model.roi_head.bbox_head.num_classes

    feats = model.extract_feat(data['inputs'])
    cls_scores, bbox_preds = model.rpn_head(feats)
    test_proposals = model.rpn_head.predict_by_feat(
        cls_scores, bbox_preds, batch_img_metas=metas, rescale=False)
    detections = model.roi_head.predict(feats, test_proposals, samples, rescale=False)
    proposal_cfg = model.train_cfg.get('rpn_proposal', model.test_cfg.rpn)
    proposals = model.rpn_head.predict_by_feat(
        cls_scores, bbox_preds, batch_img_metas=metas, cfg=proposal_cfg, rescale=False)
    anchors, valid_flags = model.rpn_head.get_anchors(
        [score.shape[-2:] for score in cls_scores], metas, device=cls_scores[0].device)

    images = []
    for i, meta in enumerate(metas):
        pseudo = pseudo_complete_cells(gts[i], detections[i], score_thr)
        truth = complete[i] if complete is not None else None
        ignored = gts_ignored[i] if gts_ignored[i] is not None and len(gts_ignored[i]) \
            else None
        rpn_labeled, rpn_pseudo, rpn_oracle = rpn_samples(
            model.rpn_head, torch.cat(anchors[i]), torch.cat(valid_flags[i]), meta,
            gts[i], ignored, [pseudo, truth])
        roi_labels, roi_is_gt, roi_scores, roi_bg_ce, (roi_pseudo, roi_oracle) = \
            roi_samples(model.roi_head, [level[i:i + 1] for level in feats],
                        proposals[i], gts[i], ignored, [pseudo, truth])
        images.append(ImageSamples(
            roi_labels=roi_labels, roi_is_gt=roi_is_gt, roi_scores=roi_scores,
            roi_bg_ce=roi_bg_ce,
            roi_pseudo=roi_pseudo, roi_oracle=roi_oracle, rpn_labeled=rpn_labeled,
            rpn_pseudo=rpn_pseudo, rpn_oracle=rpn_oracle,
            labeled_cells=class_counts(gts[i].labels, num_classes),
            pseudo_cells=class_counts(pseudo.labels, num_classes),
            complete_cells=None if truth is None else class_counts(truth.labels,
                                                                   num_classes)))
    return images


def split_dataset_config(cfg, split: str, complete: bool = False,
                         config_file: str = 'config') -> dict:
    """The dataset config of ``split`` (``'train'`` or ``'val'``) with the validation
    (else test) pipeline, which has no random transforms; ``complete`` drops the
    deletion (a ``CellCocoDataset`` only)."""
    loader = cfg.get(f'{split}_dataloader', None)
    if not loader or 'dataset' not in loader:
        raise ValueError(f'{config_file}: {split}_dataloader is not set; estimate on '
                         'a config that has it (or the other --split)')
    pipeline = None
    for name in ('test', 'val'):
        other = cfg.get(f'{name}_dataloader', None) or {}
        pipeline = other.get('dataset', {}).get('pipeline', pipeline)
    if pipeline is None:
        raise ValueError(f'{config_file}: neither val_dataloader nor test_dataloader has '
                         'a dataset pipeline to load the images without augmentation')
    dataset = loader.dataset.copy()
    dataset['pipeline'] = pipeline
    if complete:
        if type_name(dataset) != 'CellCocoDataset':
            raise ValueError(f'{config_file}: {split}_dataloader.dataset is a '
                             f'{type_name(dataset)}: '
                             '--oracle needs a CellCocoDataset, whose deletion it switches '
                             'off for the complete annotations')
        dataset['deletion'] = None
    return dataset


def even_indices(total: int, num: Optional[int] = None) -> List[int]:
    """``num`` indices evenly spaced over ``range(total)`` (all of them by default)."""
    if num is None or num >= total:
        return list(range(total))
    return sorted(set(np.linspace(0, total - 1, num).round().astype(int).tolist()))


def check_own_scale(data_sample) -> None:
    """ValueError naming the image unless its ``scale_factor`` is 1 (or absent)."""
    scale = data_sample.metainfo.get('scale_factor', (1.0, 1.0))
    if not np.allclose(scale, 1.0):
        raise ValueError(
            f'{data_sample.metainfo.get("img_path", "an image")}: the test pipeline '
            f'resizes it (scale_factor {tuple(scale)}); estimating priors and writing '
            'pseudo-labels compare the detections with the labels at the image\'s own '
            "scale: use Resize(scale_factor=1.0) as configs/_base_/datasets/_cell_coco.py")


def split_batches(dataset, indices: Sequence[int], complete=None, device='cpu'):
    """``(batch, truth)`` per image ``indices`` of ``dataset``, one image at a time:
    ``batch`` collated as the loader collates it, ``truth`` None or, with ``complete``
    (the same images with their complete annotations), ``[complete cells]`` on
    ``device`` (RuntimeError when the two datasets list other images).

    Raises:
        ValueError: the pipeline resizes an image: its labels (loaded after the resize)
            and the detections (in the frame of the model's input) would not match.
    """
    for idx in indices:
        batch = pseudo_collate([dataset[idx]])
        check_own_scale(batch['data_samples'][0])
        truth = None
        if complete is not None:
            item = complete[idx]
            if item['data_samples'].img_id != batch['data_samples'][0].img_id:
                raise RuntimeError(f'image {idx}: the complete annotation file lists '
                                   'another image; the two datasets differ')
            truth = [item['data_samples'].gt_instances.to(device)]
        yield batch, truth


def draw_split(model, dataset, indices: Sequence[int], score_thr: float = 0.5,
               complete=None, device='cpu') -> List[ImageSamples]:
    """:func:`sample_stages` of the images ``indices`` of ``dataset``, one at a time.

    Args:
        model: the detector (eval mode, on ``device``).
        dataset: the split's dataset (:func:`split_dataset_config`).
        indices: which images.
        score_thr: detections with a lower score are not pseudo-complete cells.
        complete: the same images with their complete annotations, or None.
        device: where the complete cells go (the model's device).
    """
    images = []
    for batch, truth in split_batches(dataset, indices, complete, device):
        images += sample_stages(model, batch, score_thr, truth)
    return images
