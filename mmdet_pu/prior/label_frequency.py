"""The label-frequency estimate of the prior of every PU stage of a dense or cascade
detector (``tools/estimate_prior.py`` on RetinaNet, ATSS, FCOS, GFL, RTMDet, Cascade R-CNN).

pi_m of a stage is the share of class-m positives among the samples its loss sees
(docs/method.md#dense-detectors): a dense head's unignored locations, the anchors the
RPN samples, the RoIs each cascade stage samples. :mod:`.positive_share` counts it with
the complete cells. Without them, the label frequency (after Elkan & Noto, as for Faster
R-CNN in :mod:`.estimation`) counts with the *pseudo-complete* cells instead: the
labeled cells plus the provisional detector's detections with ``score >= score_thr``
after its test NMS that are none of them (:func:`~.samples.pseudo_complete_cells`, the
two-stage estimator's). Every stage draws its samples with the labeled cells, as in
training, and its assigner makes a sample a class-m positive with those cells:

    pi_m = #{samples the pseudo-complete cells make class-m positive} / #{samples},

summed over the images, with the label frequency ``c_m = labeled / pseudo-complete cells
of class m``. ``oracle`` counts with the complete cells on the same draw of the samples
(:func:`~.positive_share.count_positive_sets`): the check on data whose files are
complete.

:func:`estimate_stages` runs it on a config's split in two passes: the detections, eval
mode; then the samples, in train mode as training draws them (the batch-norm statistics
that this pass updates enter no detection).
"""
from typing import Iterable, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import torch
from mmengine.structures import InstanceData

from mmdet.structures.bbox import get_box_tensor
from .estimate_file import build_stage_report
from .keys import PU_LOSSES, detector_kind, loss_prior_key
from .positive_share import count_positive_sets
from .samples import (class_counts, even_indices, load_detector_and_split,
                      pseudo_complete_cells, split_batches)


class StageCounts(NamedTuple):
    """What :func:`count_stages` counted.

    Attributes:
        label_frequency: per loss key, its :class:`~.positive_share.PositiveShare` with
            the pseudo-complete cells.
        oracle: the same with the complete cells; None without them.
        labeled_cells, pseudo_cells, complete_cells: (C,) cells per class (the last None
            without complete cells).
    """
    label_frequency: dict
    oracle: Optional[dict]
    labeled_cells: np.ndarray
    pseudo_cells: np.ndarray
    complete_cells: Optional[np.ndarray]


def loss_prior(loss):
    """The prior a loss holds (a buffer saved with the weights): a float (``prior``), a
    list per class (``priors``), or None for a loss without one."""
    for name in ('prior', 'priors'):
        value = getattr(loss, name, None)
        if isinstance(value, torch.Tensor):  # float32: 6 digits are exact
            values = [float(f'{v:.6g}') for v in value.reshape(-1).tolist()]
            return values[0] if name == 'prior' else values
    return None


@torch.no_grad()
def detect(model, batch: dict) -> List[InstanceData]:
    """The detections of each image of a collated ``batch`` in the frame of the model's
    input (``rescale=False``), after the test config's score threshold and NMS (``model``
    in eval mode)."""
    data = model.data_preprocessor(batch, False)
    results = model.predict(data['inputs'], data['data_samples'], rescale=False)
    return [result.pred_instances for result in results]


def count_stages(model, batches: Iterable[Tuple[dict, Sequence[InstanceData],
                                                Optional[Sequence[InstanceData]]]],
                 num_classes: int, score_thr: float = 0.5) -> StageCounts:
    """The label-frequency counts (module docstring) of every stage of ``model``.

    Args:
        model: a detector built with its ``train_cfg`` (the stages' assigners and
            samplers).
        batches: ``(batch, detections, complete)``: a collated batch of the loader
            (labeled cells as ``gt_instances``), per image its detections
            (``bboxes``, ``labels``, ``scores``, in the frame of the input) and its
            complete cells, or None (for every batch, or for none).
        num_classes: C, the classes of the cells.
        score_thr: detections with a lower score are not pseudo-complete cells.
    """
    cells = {name: np.zeros(num_classes, dtype=np.int64)
             for name in ('labeled', 'pseudo', 'complete')}
    with_complete = []

    def cell_sets():
        for batch, detections, complete in batches:
            with_complete.append(complete is not None)
            if len(set(with_complete)) > 1:
                raise ValueError('complete cells for some batches only; give them for '
                                 'every batch or for none')
            sets = []
            for i, sample in enumerate(batch['data_samples']):
                labeled = sample.gt_instances
                pseudo = pseudo_complete_cells(labeled, detections[i], score_thr)
                cells['labeled'] += class_counts(labeled.labels, num_classes)
                cells['pseudo'] += class_counts(pseudo.labels, num_classes)
                sets.append([pseudo])
                if complete is not None:
                    truth = InstanceData(bboxes=get_box_tensor(complete[i].bboxes).float(),
                                         labels=complete[i].labels.long())
                    cells['complete'] += class_counts(truth.labels, num_classes)
                    sets[-1].append(truth)
            yield batch, sets

    counts = count_positive_sets(model, cell_sets())
    oracle = with_complete[0]

    def take(k) -> dict:
        return {key: shares[k] for key, shares in counts.items()}
    return StageCounts(take(0), take(1) if oracle else None, cells['labeled'],
                       cells['pseudo'], cells['complete'] if oracle else None)


def estimate_stages(cfg, config: str, checkpoint: str, split: str = 'train',
                    num_images: Optional[int] = None, score_thr: float = 0.5,
                    oracle: bool = False, seed: int = 0, device: str = 'cpu') -> dict:
    """The estimate report (:func:`~.estimate_file.build_stage_report`) of the priors of
    a dense or cascade ``config`` (loaded as ``cfg``), from ``checkpoint`` (a detector of
    that config trained with a provisional prior). The other arguments are
    :func:`~.from_checkpoint.estimate_from_checkpoint`'s.

    Raises:
        ValueError: the model has no stage whose targets can be counted, no PU
            loss, or other classes than the dataset.
    """
    model, dataset, complete = load_detector_and_split(cfg, config, checkpoint, split,
                                                       oracle, device)
    classes = list(dataset.metainfo['classes'])
    indices = even_indices(len(dataset), num_images)

    detections = [detect(model, batch) for batch, _ in split_batches(dataset, indices)]
    torch.manual_seed(seed)
    batches = ((batch, found, truth) for (batch, truth), found in
               zip(split_batches(dataset, indices, complete), detections))
    try:
        counts = count_stages(model, batches, len(classes), score_thr)
    except ValueError as error:
        raise ValueError(f'{config}: {error}') from None
    prior_keys = {}
    for loss_key, found in counts.label_frequency.items():
        if len(found.positives) not in (1, len(classes)):
            raise ValueError(f'{config}: {loss_key} classifies {len(found.positives)} '
                             f'classes, the dataset has {len(classes)} {tuple(classes)}')
        prior_keys[loss_key] = loss_prior_key(cfg, loss_key)
    if not any(prior_keys.values()):
        raise ValueError(f'{config}: no stage has a PU loss with a prior ({list(prior_keys)} '
                         f'hold none of the losses {", ".join(PU_LOSSES)})')
    trained_with = {loss_key: loss_prior(model.get_submodule(
        loss_key.removeprefix('model.'))) for loss_key in prior_keys}
    return dict(config=config, checkpoint=checkpoint, split=split, images=len(indices),
                score_thr=score_thr, seed=seed,
                **build_stage_report(counts, prior_keys, classes, trained_with,
                                     detector_kind(cfg)))
