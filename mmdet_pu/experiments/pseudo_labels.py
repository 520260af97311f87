"""Pseudo-labels for self-training: a trained detector's confident detections on the
training split, beside the labeled cells (docs/method.md#self-training).

:func:`write_pseudo_labels` runs the detector over every training image (the config's
deletion applied, so the labeled cells are the training labels; the validation
pipeline, so no augmentation) and keeps each detection with ``score >= score_thr``
that is none of the labeled cells (IoU below ``SAME_CELL_IOU`` with every one of
them). The file it writes is what ``CellCocoDataset(pseudo_labels=...)`` adds to the
training labels: ``{"images": {file_name: [[x1, y1, x2, y2, label], ...]}, ...}``.
No complete label is read.
"""
import os.path as osp
from typing import Optional, Sequence

import numpy as np
from mmdet.structures.bbox import get_box_tensor

from mmdet_pu.io.atomic import write_json_atomic
from mmdet_pu.launch import load_config, parse_cfg_options
from mmdet_pu.prior.estimation import pseudo_complete
from mmdet_pu.prior.label_frequency import detect
from mmdet_pu.prior.samples import load_detector_and_split, resolve_device, split_batches


def new_cells(labeled, detections, score_thr: float) -> np.ndarray:
    """(K, 5) ``[x1, y1, x2, y2, label]`` of the ``detections`` (``bboxes``, ``labels``,
    ``scores``) at ``score >= score_thr`` that are none of the ``labeled`` cells."""
    kept = (detections.scores >= score_thr).cpu().numpy()
    boxes, labels, added = pseudo_complete(
        get_box_tensor(labeled.bboxes).cpu().numpy(), labeled.labels.cpu().numpy(),
        get_box_tensor(detections.bboxes).cpu().numpy()[kept],
        detections.labels.cpu().numpy()[kept])
    return np.concatenate([boxes[added], labels[added, None]], axis=1)


def write_pseudo_labels(config: str, checkpoint: str, out: str,
                        cfg_options: Sequence[str] = (), score_thr: float = 0.5,
                        device: Optional[str] = None) -> dict:
    """Write the pseudo-label file of ``checkpoint`` on ``config``'s training split
    (``device``: ``'cuda'`` or ``'cpu'``; None: cuda when available, as the estimate).

    Returns:
        dict: ``num_images`` (training images), ``labeled`` (their labeled cells),
        ``pseudo`` (cells added), ``score_thr``; also stored in the file.
    """
    device = resolve_device(device)
    cfg = load_config(config, parse_cfg_options(list(cfg_options)))
    cfg.train_dataloader.dataset.pop('pseudo_labels', None)  # the labels as deleted
    model, dataset, _ = load_detector_and_split(cfg, config, checkpoint, 'train',
                                                oracle=False, device=device)
    images, labeled = {}, 0
    for idx, (batch, _) in enumerate(split_batches(dataset, range(len(dataset)),
                                                   device=device)):
        cells = batch['data_samples'][0].gt_instances.to(device)
        labeled += len(cells)
        found = new_cells(cells, detect(model, batch)[0], score_thr)
        if len(found):
            name = osp.relpath(dataset.get_data_info(idx)['img_path'],
                               dataset.data_prefix['img'])
            images[name] = [[round(float(v), 2) for v in box[:4]] + [int(box[4])]
                            for box in found]
    summary = dict(num_images=len(dataset), labeled=labeled,
                   pseudo=sum(map(len, images.values())), score_thr=score_thr,
                   checkpoint=checkpoint)
    write_json_atomic(out, dict(summary, images=images))
    return summary
