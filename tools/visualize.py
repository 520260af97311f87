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
import os.path as osp

import mmengine
from mmengine.config import DictAction

import mmdet_pu  # noqa: F401  (registers modules, patches checkpoint loading)
from mmdet_pu.evaluation.overlay import overlays_from_dump
from mmdet_pu.engine.launch import build_runner, load_test_config


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


def draw_from_checkpoint(args):
    """Config mode: run the test loop with a ``CellOverlayHook``."""
    build_runner(load_test_config(args.source, args.checkpoint, args.cfg_options,
                                  args.work_dir, show_dir=osp.abspath(args.out_dir),
                                  overlay_style=args.style)).test()
    return sorted(osp.join(args.out_dir, name)
                  for name in mmengine.scandir(args.out_dir, suffix='.png'))


def main(argv=None):
    args = parse_args(argv)
    if args.source.endswith('.py'):
        written = draw_from_checkpoint(args)
    else:
        written = overlays_from_dump(args.source, args.ann, args.out_dir, args.img_dir,
                                     args.score_thr, args.iou_thr, args.radius, args.style)
    print(f'{len(written)} overlays in {args.out_dir}')
    return written


if __name__ == '__main__':
    main()
