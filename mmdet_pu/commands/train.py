"""Train a detector: MMDetection's ``tools/train.py`` with mmdet_pu registered.

Usage (``tools/train.py`` is the same command line)::

    python -m mmdet_pu.commands.train CONFIG [--work-dir DIR] [--resume [CKPT]] [--amp]
        [--auto-scale-lr] [--test [--show-dir DIR]] [--cfg-options k=v ...]
        [--launcher none|pytorch|slurm|mpi]

``--test`` then tests the last checkpoint in the same process, as :mod:`.test` (``CONFIG
CHECKPOINT --work-dir DIR`` with the same ``--cfg-options``) would (the test split, the
config's score threshold; ``--show-dir``: overlays), without starting Python again.

A training resumed from its last iteration (stopped during its final validation) trains
no further, so mmengine's loop never reaches that validation; it is run then, so that
every finished training has validated its last checkpoint.
"""
import argparse

from mmengine.config import DictAction
from mmengine.hooks import Hook

from cellio.cli import add_launcher_arguments, parse_launch_args
from mmdet_pu.engine.launch import (build_runner, last_checkpoint, load_config,
                                    load_test_config)


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
        '--test', action='store_true',
        help='then test the last checkpoint, as test.py CONFIG CHECKPOINT would')
    parser.add_argument(
        '--show-dir', help='with --test: TP/FP/FN overlays of every test image (as '
        'test.py --show-dir)')
    parser.add_argument(
        '--cfg-options', nargs='+', action=DictAction,
        help='override config settings, e.g. '
        'model.roi_head.bbox_head.loss_cls.prior=0.035')
    add_launcher_arguments(parser)
    args = parse_launch_args(parser)
    if args.show_dir and not args.test:
        parser.error('--show-dir needs --test')
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


class ValidationSeen(Hook):
    """Notes whether a validation ran during the training."""
    priority = 'LOWEST'

    def __init__(self):
        self.ran = False

    def after_val_epoch(self, runner, metrics=None) -> None:
        self.ran = True


def main():
    args = parse_args()
    runner = build_runner(build_cfg(args))
    seen = ValidationSeen()
    runner.register_hook(seen)
    runner.train()
    if runner.val_loop is not None and not seen.ran:  # resumed at its last iteration
        runner.val_loop.run()
    if args.test:
        build_runner(load_test_config(args.config, last_checkpoint(runner.work_dir),
                                      args.cfg_options, runner.work_dir, args.launcher,
                                      show_dir=args.show_dir)).test()


if __name__ == '__main__':
    main()
