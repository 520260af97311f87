"""TP / FP / FN overlays of test images, like the paper's result figures.

Usage::

    # from a prediction dump (tools/test.py --out preds.pkl) and the COCO annotations
    python tools/visualize.py PREDS.pkl --ann ANN.json --out-dir DIR
        [--img-dir DIR] [--score-thr 0.5] [--iou-thr 0.5 | --radius PX] [--style box|dot]

    # from a config and a checkpoint (runs the test loop; same as tools/test.py --show-dir)
    python tools/visualize.py CONFIG.py CHECKPOINT --out-dir DIR [--style box|dot]
        [--work-dir DIR] [--cfg-options k=v ...]

True positives are green, false positives red (predicted boxes), false negatives yellow
(missed ground truth); one PNG per image (``<stem>.png``), or per image and class
(``<stem>_<class>.png``) for several classes, with the counts in a caption. Matching is
``CellDetMetric``'s. In the prediction mode, label ``i`` is the ``i``-th entry of the
annotation file's ``categories`` (mmdet's ``CocoDataset`` order) and images are read
from the path stored in the dump, or from ``--img-dir/<file_name>``. In the config mode
the matching settings come from the config's ``CellDetMetric`` test evaluator.
"""
import argparse
import json
import os.path as osp

import mmcv
import mmengine
import numpy as np
from mmengine.config import Config, DictAction

import mmdet_pu  # noqa: F401  (registers modules, patches checkpoint loading)
from mmdet_pu.evaluation import add_overlay_hook, render_cell_overlays, save_cell_overlays
from mmdet_pu.launch import build_runner


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Draw TP (green), FP (red) and FN (yellow) overlays',
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument('source', help='prediction dump (.pkl) or config (.py)')
    parser.add_argument('checkpoint', nargs='?', help='checkpoint (config mode)')
    parser.add_argument('--out-dir', required=True, help='folder for the PNGs')
    parser.add_argument('--ann', help='COCO annotation file (prediction mode)')
    parser.add_argument('--img-dir', help='image folder (prediction mode; default: the '
                        'paths in the dump)')
    parser.add_argument('--score-thr', type=float, default=0.5)
    parser.add_argument('--iou-thr', type=float, default=0.5)
    parser.add_argument('--radius', type=float,
                        help='match by centre distance (px) instead of IoU')
    parser.add_argument('--style', default='box', choices=['box', 'dot'],
                        help="'dot' draws box centres, for crowded images")
    parser.add_argument('--work-dir', help='work dir of the test run (config mode)')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        help='override config settings (config mode)')
    args = parser.parse_args(argv)
    if args.source.endswith('.py'):
        if args.checkpoint is None:
            parser.error('config mode needs CHECKPOINT')
    elif args.ann is None:
        parser.error('prediction mode needs --ann')
    return args


def load_ground_truth(ann_file):
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


def _numpy(value):
    return value.numpy() if hasattr(value, 'numpy') else np.asarray(value)


def draw_from_dump(args):
    """Prediction mode: overlays of every image of the dump."""
    gt, classes = load_ground_truth(args.ann)
    written = []
    for i, result in enumerate(mmengine.load(args.source)):
        img_id = result.get('img_id')
        if img_id not in gt:
            raise ValueError(f'{args.source}: item {i} has img_id {img_id!r}, which is '
                             f'not an image of {args.ann}')
        file_name, gt_bboxes, gt_labels = gt[img_id]
        img_path = (osp.join(args.img_dir, file_name) if args.img_dir
                    else result.get('img_path'))
        if not img_path or not osp.isfile(img_path):
            raise FileNotFoundError(f'image {img_path!r} of img_id {img_id} not found; '
                                    'pass --img-dir')
        pred = result['pred_instances']
        overlays = render_cell_overlays(
            mmcv.imread(img_path), _numpy(pred['bboxes']), _numpy(pred['scores']),
            _numpy(pred['labels']), gt_bboxes, gt_labels, classes,
            score_thr=args.score_thr, iou_thr=args.iou_thr, radius=args.radius,
            style=args.style)
        written += save_cell_overlays(args.out_dir, img_path, overlays)
    return written


def draw_from_checkpoint(args):
    """Config mode: run the test loop with a ``CellOverlayHook``."""
    cfg = Config.fromfile(args.source)
    if args.cfg_options:
        cfg.merge_from_dict(args.cfg_options)
    cfg.work_dir = args.work_dir or cfg.get('work_dir', None) or osp.join(
        'work_dirs', osp.splitext(osp.basename(args.source))[0])
    cfg.load_from = args.checkpoint
    add_overlay_hook(cfg, osp.abspath(args.out_dir), style=args.style)
    build_runner(cfg).test()
    return sorted(osp.join(args.out_dir, name)
                  for name in mmengine.scandir(args.out_dir, suffix='.png'))


def main(argv=None):
    args = parse_args(argv)
    written = (draw_from_checkpoint(args) if args.source.endswith('.py')
               else draw_from_dump(args))
    print(f'{len(written)} overlays in {args.out_dir}')
    return written


if __name__ == '__main__':
    main()
