"""Pseudo-labels for self-training: a trained detector's confident detections on the
training split, beside the labeled cells (docs/method.md#self-training).

:func:`write_pseudo_labels` runs the detector over every training image (the config's
deletion applied, so the labeled cells are the training labels; the validation
pipeline, so no augmentation) and keeps each detection with ``score >= score_thr``
that is none of the labeled cells (IoU below ``SAME_CELL_IOU`` with every one of
them). With ``uncertain_thr`` the detections with ``uncertain_thr <= score <
score_thr`` that are none of the labeled cells are kept apart as *uncertain*: the round
neither learns them as cells nor as background (ignored regions). The file it writes is
what ``CellCocoDataset(pseudo_labels=...)`` adds to the training labels: ``{"images":
{file_name: [[x1, y1, x2, y2, label], ...]}, "scores": {file_name: [score, ...]},
"uncertain": {file_name: [...]}, ...}``, the scores those of the detections in
``images`` (what ``pseudo_label_weights`` weighs them by). No complete label is read.
"""
import os.path as osp
from typing import List, Optional, Sequence, Tuple

import numpy as np
from mmdet.structures.bbox import get_box_tensor

from cellio.atomic import write_json_atomic
from mmdet_pu.engine.launch import load_config, parse_cfg_options
from mmdet_pu.prior.estimation import new_detections
from mmdet_pu.prior.keys import typed_nodes
from mmdet_pu.prior.label_frequency import detect
from mmdet_pu.prior.samples import load_detector_and_split, resolve_device, split_batches
from .fused_ensemble import file_stamps


def new_cells(labeled, detections, score_thr: float) -> Tuple[np.ndarray, np.ndarray]:
    """The ``detections`` (``bboxes``, ``labels``, ``scores``) at ``score >= score_thr``
    that are none of the ``labeled`` cells: ``(K, 5)`` ``[x1, y1, x2, y2, label]`` (to
    the file's 0.01 px) and their ``(K,)`` scores. A box without width or height at that
    precision (a detector clips its boxes to the image, and one beyond the border
    becomes a line) is no cell and left out."""
    scores = detections.scores.cpu().numpy()
    boxes = np.round(get_box_tensor(detections.bboxes).cpu().numpy().astype(np.float64), 2)
    proper = (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
    new = (scores >= score_thr) & proper & new_detections(
        get_box_tensor(labeled.bboxes).cpu().numpy(), boxes)
    labels = detections.labels.cpu().numpy()
    return np.concatenate([boxes[new], labels[new, None]], axis=1), scores[new]


def _as_lists(boxes: np.ndarray) -> list:
    return [[float(v) for v in box[:4]] + [int(box[4])] for box in boxes]


def write_pseudo_labels(config: str, checkpoint: str, out: str,
                        cfg_options: Sequence[str] = (), score_thr: float = 0.5,
                        uncertain_thr: Optional[float] = None,
                        device: Optional[str] = None) -> dict:
    """Write the pseudo-label file of ``checkpoint`` on ``config``'s training split
    (``device``: ``'cuda'`` or ``'cpu'``; None: cuda when available, as the estimate;
    ``uncertain_thr``: the lowest score of an uncertain detection, None for none).

    Returns:
        dict: ``num_images`` (training images), ``labeled`` (their labeled cells),
        ``pseudo`` (cells added), ``num_uncertain`` (detections to ignore), ``score_thr``,
        ``uncertain_thr``, ``checkpoint`` and ``checkpoint_stamp`` (its size and
        modification time, :func:`~.fused_ensemble.file_stamps`: what tells a resumed
        fit that the checkpoint at that path changed since); also stored in the file.

    Raises:
        ValueError: ``uncertain_thr`` is not below ``score_thr``.
    """
    if uncertain_thr is not None and not 0 <= uncertain_thr < score_thr:
        raise ValueError(f'uncertain_thr: expected 0 <= uncertain_thr < score_thr '
                         f'({score_thr:g}), got {uncertain_thr!r}')
    lowest = score_thr if uncertain_thr is None else uncertain_thr
    device = resolve_device(device)
    cfg = load_config(config, parse_cfg_options(list(cfg_options)))
    cfg.train_dataloader.dataset.pop('pseudo_labels', None)  # the labels as deleted
    model, dataset, _ = load_detector_and_split(cfg, config, checkpoint, 'train',
                                                oracle=False, device=device)
    images, scores_of, uncertain, labeled = {}, {}, {}, 0
    for idx, (batch, _) in enumerate(split_batches(dataset, range(len(dataset)),
                                                   device=device)):
        cells = batch['data_samples'][0].gt_instances.to(device)
        labeled += len(cells)
        detections = detect(model, batch)[0]
        name = osp.relpath(dataset.get_data_info(idx)['img_path'],
                           dataset.data_prefix['img'])
        found, scores = new_cells(cells, detections, lowest)
        confident = scores >= score_thr
        if confident.any():
            images[name] = _as_lists(found[confident])
            scores_of[name] = [round(float(v), 6) for v in scores[confident]]
        if not confident.all():
            uncertain[name] = _as_lists(found[~confident])
    summary = dict(num_images=len(dataset), labeled=labeled,
                   pseudo=sum(map(len, images.values())),
                   num_uncertain=sum(map(len, uncertain.values())), score_thr=score_thr,
                   uncertain_thr=uncertain_thr, checkpoint=checkpoint,
                   checkpoint_stamp=file_stamps([checkpoint])[0])
    write_json_atomic(out, dict(summary, images=images, scores=scores_of,
                                uncertain=uncertain))
    return summary


#: Assigners that leave the samples inside ignored instances out (mmdet's
#: ``ignore_iof_thr``); a config whose assigners are all of other types cannot ignore.
IGNORING_ASSIGNERS = ('MaxIoUAssigner', 'ATSSAssigner')
#: A sample is ignored when this share of its box lies inside an uncertain detection.
IGNORE_IOF_THR = 0.5


def ignore_options(train_cfg, prefix: str = 'model.train_cfg') -> List[str]:
    """The ``--cfg-options`` that make every assigner of ``train_cfg`` (the model's, at
    ``prefix``; Cascade R-CNN's stages included) of a type in :data:`IGNORING_ASSIGNERS`
    ignore the samples inside the uncertain detections (``ignore_iof_thr`` =
    :data:`IGNORE_IOF_THR`); ``[]`` when there is none."""
    return [f'{path}.ignore_iof_thr={IGNORE_IOF_THR}'
            for path, _ in typed_nodes(train_cfg, prefix, IGNORING_ASSIGNERS)]
