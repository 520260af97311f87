"""TP / FP / FN overlays like the paper's result figures (Figs. 2-5).

True positives are drawn green, false positives red (both as the predicted boxes) and
false negatives yellow (the missed ground-truth boxes), one picture per class, with the
class name and the counts, in the same colours, in a band above the image. Matching is the metric's
(:func:`mmdet_pu.evaluation.matching.match_image`), so the picture shows exactly what
:class:`CellDetMetric` counted. :func:`overlays_from_dump` draws them from a prediction
dump (``tools/test.py --out``) and the COCO annotations (:func:`read_coco_ground_truth`).
"""
import json
import os.path as osp
import re
from typing import Dict, List, Optional, Sequence

import cv2
import mmcv
import mmengine
import numpy as np

from cellio.atomic import write_image_atomic
from .matching import match_image, to_numpy

#: BGR colours: TP green, FP red, FN yellow.
COLOURS = dict(tp=(0, 200, 0), fp=(0, 0, 255), fn=(0, 230, 255))
STYLES = ('box', 'dot')


def draw_overlay(image: np.ndarray, tp_bboxes, fp_bboxes, fn_bboxes,
                 title: str = '', style: str = 'box') -> np.ndarray:
    """Draw TP (green), FP (red) and FN (yellow) boxes on a copy of a BGR image.

    Args:
        image: (H, W, 3) uint8 BGR image.
        tp_bboxes, fp_bboxes, fn_bboxes: (K, 4) ``(x1, y1, x2, y2)`` boxes.
        title: text (e.g. the class name) that starts the caption, a band added above
            the image with the counts ``TP n  FP n  FN n`` in their colours.
        style: ``'box'`` draws rectangles; ``'dot'`` draws filled dots at the box
            centres, for crowded images (the paper's CRCHisto figure).

    Returns:
        (H + band, W, 3) uint8 image.
    """
    if style not in STYLES:
        raise ValueError(f'style must be one of {STYLES}, got {style!r}')
    canvas = np.ascontiguousarray(image.copy())
    thickness = max(1, round(max(canvas.shape[:2]) / 400))
    # FN first so that the prediction colours stay on top.
    for kind, bboxes in (('fn', fn_bboxes), ('fp', fp_bboxes), ('tp', tp_bboxes)):
        for x1, y1, x2, y2 in np.asarray(bboxes, dtype=np.float64).reshape(-1, 4):
            if style == 'box':
                cv2.rectangle(canvas, (round(x1), round(y1)), (round(x2), round(y2)),
                              COLOURS[kind], thickness)
            else:
                cv2.circle(canvas, (round((x1 + x2) / 2), round((y1 + y2) / 2)),
                           thickness + 2, COLOURS[kind], -1)
    counts = {kind: len(np.asarray(bboxes).reshape(-1, 4)) for kind, bboxes in
              (('tp', tp_bboxes), ('fp', fp_bboxes), ('fn', fn_bboxes))}
    parts = [(title, (255, 255, 255))] if title else []
    parts += [(f'{kind.upper()} {counts[kind]}', COLOURS[kind]) for kind in counts]
    return np.concatenate([caption_band(parts, canvas.shape[1], thickness), canvas])


def caption_band(parts: Sequence[tuple], width: int, thickness: int = 1) -> np.ndarray:
    """A dark band with ``(text, BGR colour)`` parts written left to right, the font
    shrunk so that the whole caption fits ``width``."""
    font = cv2.FONT_HERSHEY_SIMPLEX
    text = '  '.join(part for part, _ in parts)
    scale = 0.45 * thickness
    text_width = cv2.getTextSize(text, font, scale, thickness)[0][0]
    scale *= min(1.0, (width - 8) / max(text_width, 1))
    height = cv2.getTextSize(text, font, scale, thickness)[0][1]
    band = np.full((height + 10, width, 3), 40, np.uint8)
    x = 4
    for part, colour in parts:
        cv2.putText(band, part, (x, height + 4), font, scale, colour, thickness,
                    cv2.LINE_AA)
        x += cv2.getTextSize(part + '  ', font, scale, thickness)[0][0]
    return band


def render_cell_overlays(image: np.ndarray, pred_bboxes, pred_scores, pred_labels,
                         gt_bboxes, gt_labels, classes: Sequence[str],
                         score_thr: float = 0.5, iou_thr: float = 0.5,
                         radius: Optional[float] = None,
                         style: str = 'box') -> Dict[str, np.ndarray]:
    """Match one image's detections and draw one overlay per class.

    Returns:
        ``{class name: overlay image}`` for every class of ``classes``.
    """
    pred_bboxes = np.asarray(pred_bboxes, dtype=np.float64).reshape(-1, 4)
    gt_bboxes = np.asarray(gt_bboxes, dtype=np.float64).reshape(-1, 4)
    pred_labels = np.asarray(pred_labels).reshape(-1)
    gt_labels = np.asarray(gt_labels).reshape(-1)
    match = match_image(pred_bboxes, pred_scores, pred_labels, gt_bboxes, gt_labels,
                        score_thr=score_thr, iou_thr=iou_thr, radius=radius)
    overlays = {}
    for c, name in enumerate(classes):
        tp = pred_bboxes[match.pred_tp & (pred_labels == c)]
        fp = pred_bboxes[match.kept & ~match.pred_tp & (pred_labels == c)]
        fn = gt_bboxes[~match.gt_matched & (gt_labels == c)]
        overlays[name] = draw_overlay(image, tp, fp, fn, title=name, style=style)
    return overlays


def overlay_paths(out_dir: str, img_path: str, classes: Sequence[str]) -> Dict[str, str]:
    """Output file per class: ``<out_dir>/<image stem>.png`` for a single class,
    ``<out_dir>/<image stem>_<class>.png`` otherwise."""
    stem = osp.splitext(osp.basename(img_path))[0]
    if len(classes) == 1:
        return {classes[0]: osp.join(out_dir, f'{stem}.png')}
    return {name: osp.join(out_dir, f'{stem}_{re.sub(r"[^A-Za-z0-9_.-]", "_", name)}.png')
            for name in classes}


def save_cell_overlays(out_dir: str, img_path: str, overlays: Dict[str, np.ndarray]):
    """Write the overlays of :func:`render_cell_overlays` (BGR) as PNGs, each completely
    or not at all (:func:`~cellio.atomic.write_image_atomic`); returns the paths."""
    paths = overlay_paths(out_dir, img_path, list(overlays))
    for name, picture in overlays.items():
        write_image_atomic(paths[name], picture[..., ::-1])  # it takes RGB
    return list(paths.values())


def read_coco_ground_truth(ann_file: str):
    """``{image id: (file_name, boxes xyxy, labels)}`` and the class names."""
    with open(ann_file) as f:
        coco = json.load(f)
    for field in ('images', 'annotations', 'categories'):
        if field not in coco:
            raise ValueError(f'{ann_file}: field {field!r} missing; expected COCO json')
    classes = [c['name'] for c in coco['categories']]
    label_of = {c['id']: i for i, c in enumerate(coco['categories'])}
    boxes = {image['id']: [] for image in coco['images']}
    labels = {image['id']: [] for image in coco['images']}
    for i, ann in enumerate(coco['annotations']):
        if ann['image_id'] not in boxes or ann['category_id'] not in label_of:
            raise ValueError(f'{ann_file}: annotations[{i}] refers to image '
                             f'{ann["image_id"]} / category {ann["category_id"]}, '
                             'which the file does not define')
        x, y, w, h = ann['bbox']
        boxes[ann['image_id']].append([x, y, x + w, y + h])
        labels[ann['image_id']].append(label_of[ann['category_id']])
    gt = {image['id']: (image['file_name'],
                        np.array(boxes[image['id']], dtype=np.float64).reshape(-1, 4),
                        np.array(labels[image['id']], dtype=np.int64))
          for image in coco['images']}
    return gt, classes


def overlays_from_dump(preds: str, ann_file: str, out_dir: str,
                       img_dir: Optional[str] = None, score_thr: float = 0.5,
                       iou_thr: float = 0.5, radius: Optional[float] = None,
                       style: str = 'box') -> List[str]:
    """Overlays of every image of a prediction dump (``tools/test.py --out``).

    Label ``i`` is the ``i``-th entry of the annotation file's ``categories`` (mmdet's
    ``CocoDataset`` order); images are read from the path stored in the dump, or from
    ``img_dir/<file_name>``. Returns the PNGs written (:func:`save_cell_overlays`).
    """
    gt, classes = read_coco_ground_truth(ann_file)
    written = []
    for i, result in enumerate(mmengine.load(preds)):
        img_id = result.get('img_id')
        if img_id not in gt:
            raise ValueError(f'{preds}: item {i} has img_id {img_id!r}, which is '
                             f'not an image of {ann_file}')
        file_name, gt_bboxes, gt_labels = gt[img_id]
        img_path = (osp.join(img_dir, file_name) if img_dir
                    else result.get('img_path'))
        if not img_path or not osp.isfile(img_path):
            raise FileNotFoundError(f'image {img_path!r} of img_id {img_id} not found; '
                                    'pass --img-dir')
        pred = result['pred_instances']
        overlays = render_cell_overlays(
            mmcv.imread(img_path), to_numpy(pred['bboxes']), to_numpy(pred['scores']),
            to_numpy(pred['labels']), gt_bboxes, gt_labels, classes,
            score_thr=score_thr, iou_thr=iou_thr, radius=radius, style=style)
        written += save_cell_overlays(out_dir, img_path, overlays)
    return written
