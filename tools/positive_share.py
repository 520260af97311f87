"""Measure the share of cells among the samples of each classification loss: the prior
pi of every PU stage of a detector (``mmdet_pu/prior/positive_share.py``).

Usage::

    python tools/positive_share.py CONFIG [--checkpoint CKPT] [--num-images N]
        [--batch-size B] [--seed 0] [--device cpu] [--out FILE.json]
        [--cfg-options k=v ...]

CONFIG is an experiment config with its deletion (usually the CE parent of the PU
config); its training images are read twice, with the deletion (the training labels)
and without it (the complete cells), so its annotation file must be complete (the
synthetic sets, the paper's datasets before deletion). Each loss's samples are drawn as
in training and the true cells among them are counted: for a dense head every location
its assigner does not ignore, for an RPN and each RoI stage the anchors or RoIs its
sampler draws. ``--checkpoint`` loads a trained model, needed where the assignment
depends on the predictions (RTMDet's dynamic assigner, every RoI stage of a two-stage or
cascade detector); RetinaNet, ATSS and the RPN's anchors need none.

Prints, per loss, the samples, the positives and the share of each class, and the
``--cfg-options`` that set each loss's prior to its share (three significant digits;
``prior`` for one class, ``priors`` for several). ``--out`` writes them as JSON.
"""
import argparse

from mmengine.config import DictAction

from cellio.atomic import write_json_atomic
from mmdet_pu.engine.launch import load_config
from mmdet_pu.prior.positive_share import positive_shares


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Share of cells among the samples of each classification loss',
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument('config', help='experiment config file (with its deletion)')
    parser.add_argument('--num-images', type=int, metavar='N',
                        help='training images to measure, drawn at random (default: all)')
    parser.add_argument('--batch-size', type=int, metavar='B',
                        help='images per batch (default: the training batch size)')
    parser.add_argument('--checkpoint', help='trained weights (default: random init)')
    parser.add_argument('--seed', type=int, default=0,
                        help='seed of the image draw and the samplers (default: 0)')
    parser.add_argument('--device', default='cpu', help='cpu or cuda (default: cpu)')
    parser.add_argument('--out', metavar='FILE.json', help='write the shares here')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        metavar='KEY=VALUE', help='override settings of the config')
    args = parser.parse_args(argv)
    for name in ('num_images', 'batch_size'):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f'--{name.replace("_", "-")} {value}: expected >= 1')
    return args


def prior_option(key, shares):
    """The ``--cfg-options`` item that sets the loss at ``key`` to ``shares``."""
    values = [float(f'{share:.3g}') for share in shares]
    if len(values) == 1:
        return f'{key}.prior={values[0]}'
    return f'{key}.priors=[{",".join(str(v) for v in values)}]'


def main(argv=None):
    args = parse_args(argv)
    cfg = load_config(args.config, args.cfg_options)
    results = positive_shares(cfg, args.checkpoint, args.num_images, args.batch_size,
                              args.seed, args.device, config_file=args.config)
    options = []
    print(f'{"loss":45s} {"samples":>10s}  positives (share) per class')
    for key, result in results.items():
        counts = '  '.join(f'{n} ({share:.3g})'
                           for n, share in zip(result.positives, result.shares))
        print(f'{key:45s} {result.total:10d}  {counts}')
        options.append(prior_option(key, result.shares))
    print('--cfg-options ' + ' '.join(options))
    if args.out:
        write_json_atomic(args.out, dict(
            config=args.config, checkpoint=args.checkpoint, seed=args.seed,
            num_images=args.num_images,
            losses={key: dict(total=r.total, positives=list(r.positives),
                              shares=list(r.shares)) for key, r in results.items()},
            cfg_options=options), indent=1)


if __name__ == '__main__':
    main()
