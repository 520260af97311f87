"""Train a detector: MMDetection's ``tools/train.py`` with mmdet_pu registered.

Usage::

    python tools/train.py CONFIG [--work-dir DIR] [--resume [CKPT]] [--amp]
        [--auto-scale-lr] [--cfg-options k=v ...] [--launcher none|pytorch|slurm|mpi]
"""
import argparse
import os

from mmengine.config import DictAction

import mmdet_pu  # noqa: F401  (registers modules, patches checkpoint loading)
from mmdet_pu.launch import build_runner, load_config


def parse_args():
    parser = argparse.ArgumentParser(description='Train a detector')
    parser.add_argument('config', help='train config file path')
    parser.add_argument('--work-dir', help='the dir to save logs and models')
    parser.add_argument(
        '--amp', action='store_true', help='enable automatic mixed precision')
    parser.add_argument(
        '--auto-scale-lr', action='store_true',
        help='scale the learning rate with the total batch size')
    parser.add_argument(
        '--resume', nargs='?', type=str, const='auto',
        help='resume from CKPT, or from the latest checkpoint of the work dir '
        'when no path is given')
    parser.add_argument(
        '--cfg-options', nargs='+', action=DictAction,
        help='override config settings, e.g. '
        'model.roi_head.bbox_head.loss_cls.prior=0.035')
    parser.add_argument(
        '--launcher', choices=['none', 'pytorch', 'slurm', 'mpi'],
        default='none', help='job launcher')
    # torch.distributed.launch passes --local-rank (torch >= 2.0)
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)
    args = parser.parse_args()
    if 'LOCAL_RANK' not in os.environ:
        os.environ['LOCAL_RANK'] = str(args.local_rank)
    return args


def build_cfg(args):
    cfg = load_config(args.config, args.cfg_options, args.work_dir, args.launcher)
    if args.amp:
        cfg.optim_wrapper.type = 'AmpOptimWrapper'
        cfg.optim_wrapper.loss_scale = 'dynamic'
    if args.auto_scale_lr:
        if 'base_batch_size' not in cfg.get('auto_scale_lr', {}):
            raise RuntimeError('--auto-scale-lr needs `auto_scale_lr = dict('
                               'base_batch_size=...)` in the config '
                               f'{args.config}')
        cfg.auto_scale_lr.enable = True
    if args.resume == 'auto':
        cfg.resume = True
        cfg.load_from = None
    elif args.resume is not None:
        cfg.resume = True
        cfg.load_from = args.resume
    return cfg


def main():
    args = parse_args()
    cfg = build_cfg(args)
    build_runner(cfg).train()


if __name__ == '__main__':
    main()
