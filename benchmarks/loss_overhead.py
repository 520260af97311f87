"""Training-step time of each detector with its own classification loss vs the PU loss.

Detectors (ResNet-18 backbones with 64-channel necks and heads; RTMDet-tiny's CSPNeXt;
random init, one class):

* ``faster-rcnn``: ``configs/_base_/models/faster-rcnn_r18-slim_fpn.py``, cross entropy vs
  ``PURPNHead`` + binary ``PULoss`` in the RPN and ``PULoss`` in the RoI head
  (configs/synthetic/synthetic_keep1_pu.py);
* ``retinanet``, ``atss``, ``fcos``, ``gfl``, ``rtmdet``: mmdet's own configs, the
  mmdet head with ``FocalLoss`` / ``QualityFocalLoss`` vs the PU head
  (``PURetinaHead``, ``PUATSSHead``, ``PUFCOSHead``, ``PUGFLHead``,
  ``PURTMDetSepBNHead``) with ``FocalPULoss`` / ``QualityFocalPULoss``;
* ``cascade-rcnn``: mmdet's Cascade R-CNN, cross entropy vs ``PURPNHead`` + ``PULoss``
  in the RPN and ``PULoss`` in each of the three stages.

With ``--box-fit`` the PU model also learns the box-fit negatives of the labeled cells
(docs/method.md#box-fit-negatives: ``BoxFitShared2FCBBoxHead`` with
``OverlapRandomSampler`` in Faster R-CNN's RoI head and each Cascade R-CNN stage,
``box_fit_weight=1`` in the anchor heads; FCOS and RTMDet have none). With
``--per-level`` the dense PU losses keep their bracket non-negative per FPN level
(``per_level=True``, docs/method.md#level-wise-bracket; the dense detectors only).

The two models of a pair hold identical weights. After a warmup, training steps (forward,
losses, backward, Adam update) on the same generated batch alternate between them (own,
PU, own, PU, ...) so both see the same machine load; the script prints each model's
median step time and the median of the per-round ratios PU / own, one detector after
the other. Adam runs with learning rate 0, so the weights stay equal: every round both
models make the same predictions, proposals and RoIs, and the ratio is the cost of the
losses. (With a learning rate the two models drift apart within a few steps, and with
them the proposals' sizes, hence RoIAlign's work, which grows with the RoI area, and the
NMS: a property of the weights reached, not of the loss.)

    OMP_NUM_THREADS=1 python benchmarks/loss_overhead.py --rounds 20 [--box-fit] [--per-level]
"""
import argparse
import copy
import statistics
import time
from pathlib import Path

import torch
from mmengine.config import Config
from mmengine.hub import get_config
from mmengine.optim import OptimWrapper
from mmengine.registry import init_default_scope
from mmengine.structures import InstanceData

from mmdet.registry import MODELS
from mmdet.structures import DetDataSample
import mmdet_pu  # noqa: F401  (registers the PU heads and losses)

SLIM_FASTER_RCNN = (Path(__file__).resolve().parents[1] / 'configs' / '_base_' /
                    'models' / 'faster-rcnn_r18-slim_fpn.py')
#: name: (mmdet config, PU head, PU loss)
DENSE = {
    'retinanet': ('retinanet/retinanet_r50_fpn_1x_coco.py', 'PURetinaHead', 'FocalPULoss'),
    'atss': ('atss/atss_r50_fpn_1x_coco.py', 'PUATSSHead', 'FocalPULoss'),
    'fcos': ('fcos/fcos_r50-caffe_fpn_gn-head_1x_coco.py', 'PUFCOSHead', 'FocalPULoss'),
    'gfl': ('gfl/gfl_r50_fpn_1x_coco.py', 'PUGFLHead', 'QualityFocalPULoss'),
    'rtmdet': ('rtmdet/rtmdet_tiny_8xb32-300e_coco.py', 'PURTMDetSepBNHead',
               'QualityFocalPULoss'),
}
CASCADE = 'cascade_rcnn/cascade-rcnn_r50_fpn_1x_coco.py'
DETECTORS = ['faster-rcnn', *DENSE, 'cascade-rcnn']
#: The detectors that can learn box-fit negatives (the point heads cannot).
BOX_FIT_DETECTORS = ['faster-rcnn', 'retinanet', 'atss', 'gfl', 'cascade-rcnn']
BOX_FIT_HEAD = dict(type='BoxFitShared2FCBBoxHead')
BOX_FIT_SAMPLER = dict(type='OverlapRandomSampler')
PRIOR = 0.035  # two-stage heads
DENSE_PRIOR = 0.005  # share of positive locations of a dense head
PU_RPN = dict(type='PURPNHead')
PU_RPN_LOSS = dict(type='PULoss', prior=PRIOR, use_sigmoid=True, loss_weight=1.0)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--detectors', nargs='+', choices=DETECTORS,
                        help='detectors to measure, in turn (default: all, or all that '
                        'can learn box-fit negatives)')
    parser.add_argument('--rounds', type=int, default=20,
                        help='timed rounds per detector, one step of each model per round')
    parser.add_argument('--warmup', type=int, default=3, help='untimed rounds')
    parser.add_argument('--size', type=int, default=256, help='image side (px)')
    parser.add_argument('--batch', type=int, default=2, help='images per batch')
    parser.add_argument('--cells', type=int, default=12, help='cells per image')
    parser.add_argument('--box-fit', action='store_true',
                        help='the PU model also learns box-fit negatives')
    parser.add_argument('--per-level', action='store_true',
                        help='the dense PU losses clamp the bracket per FPN level')
    args = parser.parse_args()
    if args.detectors is None:
        args.detectors = BOX_FIT_DETECTORS if args.box_fit else DETECTORS
        if args.per_level:
            args.detectors = [name for name in args.detectors if name in DENSE]
    refused = [name for name in args.detectors if name not in BOX_FIT_DETECTORS]
    if args.box_fit and refused:
        parser.error(f'--box-fit: {", ".join(refused)} cannot learn box-fit negatives '
                     f'(choose from {", ".join(BOX_FIT_DETECTORS)})')
    not_dense = [name for name in args.detectors if name not in DENSE]
    if args.per_level and not_dense:
        parser.error(f'--per-level: {", ".join(not_dense)} has no dense PU loss '
                     f'(choose from {", ".join(DENSE)})')
    return args


def _no_sync_bn(node):
    if isinstance(node, dict):
        if node.get('type') == 'SyncBN':
            node['type'] = 'BN'
        for child in node.values():
            _no_sync_bn(child)
    elif isinstance(node, list):
        for child in node:
            _no_sync_bn(child)


def _mmdet_model(config):
    model = copy.deepcopy(get_config(f'mmdet::{config}').model)
    _no_sync_bn(model)
    model.backbone.init_cfg = None
    if model.backbone.type == 'ResNet':
        model.backbone.depth = 18
        model.neck.in_channels = [64, 128, 256, 512]
    return model


def model_configs(name, box_fit=False, per_level=False):
    """The own-loss and the PU model config of detector ``name`` (``box_fit``: the PU
    model also learns box-fit negatives; ``per_level``: its dense PU loss clamps the
    bracket per FPN level)."""
    if name == 'faster-rcnn':
        own = Config.fromfile(str(SLIM_FASTER_RCNN)).model
        pu = copy.deepcopy(own)
        pu.rpn_head.update(PU_RPN, loss_cls=PU_RPN_LOSS)
        pu.roi_head.bbox_head.loss_cls = dict(type='PULoss', prior=PRIOR)
        if box_fit:
            pu.roi_head.bbox_head.update(BOX_FIT_HEAD)
            pu.train_cfg.rcnn.sampler.update(BOX_FIT_SAMPLER)
        return own, pu
    if name == 'cascade-rcnn':
        own = _mmdet_model(CASCADE)
        own.neck.out_channels = 64
        own.rpn_head.update(in_channels=64, feat_channels=64)
        own.roi_head.bbox_roi_extractor.out_channels = 64
        for head in own.roi_head.bbox_head:
            head.update(in_channels=64, fc_out_channels=256, num_classes=1)
        own.train_cfg.rpn_proposal.update(nms_pre=1000, max_per_img=300)
        for stage in own.train_cfg.rcnn:
            stage.sampler.num = 128
        pu = copy.deepcopy(own)
        pu.rpn_head.update(PU_RPN, loss_cls=PU_RPN_LOSS)
        for head, stage in zip(pu.roi_head.bbox_head, pu.train_cfg.rcnn):
            head.loss_cls.update(type='PULoss', prior=PRIOR)
            if box_fit:
                head.update(BOX_FIT_HEAD)
                stage.sampler.update(BOX_FIT_SAMPLER)
        return own, pu
    config, pu_head, pu_loss = DENSE[name]
    own = _mmdet_model(config)
    own.neck.out_channels = 64
    own.bbox_head.update(num_classes=1, in_channels=64, feat_channels=64)
    pu = copy.deepcopy(own)
    pu.bbox_head.type = pu_head
    pu.bbox_head.loss_cls.update(type=pu_loss, prior=DENSE_PRIOR, per_level=per_level)
    if box_fit:
        pu.bbox_head.box_fit_weight = 1.0
    return own, pu


def build_models(name, box_fit=False, per_level=False):
    own_cfg, pu_cfg = model_configs(name, box_fit, per_level)
    own, pu = MODELS.build(own_cfg), MODELS.build(pu_cfg)
    # same initial weights; the PU model additionally holds the prior buffers
    missing, unexpected = pu.load_state_dict(own.state_dict(), strict=False)
    assert not unexpected and all(key.endswith('prior') for key in missing), missing
    return own, pu


def make_batch(model, size, batch, cells, cell_size=24):
    """One preprocessed batch of noise images with ``cells`` square boxes each."""
    gen = torch.Generator().manual_seed(0)
    inputs, samples = [], []
    for _ in range(batch):
        inputs.append(torch.randint(0, 256, (3, size, size), dtype=torch.uint8,
                                    generator=gen))
        xy = torch.rand(cells, 2, generator=gen) * (size - cell_size)
        sample = DetDataSample(metainfo=dict(img_shape=(size, size),
                                             ori_shape=(size, size),
                                             scale_factor=(1.0, 1.0)))
        sample.gt_instances = InstanceData(
            bboxes=torch.cat([xy, xy + cell_size], dim=1),
            labels=torch.zeros(cells, dtype=torch.long))
        samples.append(sample)
    return model.data_preprocessor(dict(inputs=inputs, data_samples=samples), True)


def train_step(model, optim_wrapper, data):
    start = time.perf_counter()
    losses = model(**data, mode='loss')
    loss, _ = model.parse_losses(losses)
    optim_wrapper.update_params(loss)
    return time.perf_counter() - start


def measure(name, args):
    """Median step times (own, PU) and the median per-round ratio PU / own."""
    torch.manual_seed(0)
    models = build_models(name, args.box_fit, args.per_level)
    data = [make_batch(m, args.size, args.batch, args.cells) for m in models]
    optims = [OptimWrapper(torch.optim.Adam(m.parameters(), lr=0.0)) for m in models]
    for model in models:
        model.train()
    times = ([], [])
    for round_idx in range(args.warmup + args.rounds):
        for k in range(2):
            elapsed = train_step(models[k], optims[k], data[k])
            if round_idx >= args.warmup:
                times[k].append(elapsed)
    ratios = [pu / own for own, pu in zip(*times)]
    return (statistics.median(times[0]), statistics.median(times[1]),
            statistics.median(ratios))


def main():
    args = parse_args()
    init_default_scope('mmdet')
    print(f'threads={torch.get_num_threads()} size={args.size} batch={args.batch} '
          f'rounds={args.rounds} warmup={args.warmup} box_fit={args.box_fit} '
          f'per_level={args.per_level}')
    print(f'{"detector":<14}{"own loss step":>15}{"PU step":>11}{"ratio PU/own":>15}')
    for name in args.detectors:
        own, pu, ratio = measure(name, args)
        print(f'{name:<14}{own * 1e3:>12.1f} ms{pu * 1e3:>8.1f} ms{ratio:>15.4f}',
              flush=True)


if __name__ == '__main__':
    main()
