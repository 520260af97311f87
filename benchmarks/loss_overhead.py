"""Training-step time of the slim Faster R-CNN with the PU losses vs cross entropy.

Both models are built from ``configs/_base_/models/faster-rcnn_r18-slim_fpn.py`` with
identical initial weights: the cross-entropy one as is, the PU one with ``PURPNHead`` +
binary ``PULoss`` in the RPN and ``PULoss`` in the RoI head
(configs/synthetic/synthetic_keep1_pu.py).
After a warmup, training steps on the same generated batch alternate between the two
models (CE, PU, CE, PU, ...) so both see the same machine load; the script prints the
median step time of each and the median of the per-round ratios PU / CE.

    OMP_NUM_THREADS=1 python benchmarks/loss_overhead.py --rounds 40
"""
import argparse
import copy
import statistics
import time
from pathlib import Path

import torch
from mmengine.config import Config
from mmengine.optim import OptimWrapper
from mmengine.registry import init_default_scope
from mmengine.structures import InstanceData

from mmdet.registry import MODELS
from mmdet.structures import DetDataSample
import mmdet_pu  # noqa: F401  (registers PURPNHead and PULoss)

MODEL_CFG = (Path(__file__).resolve().parents[1] / 'configs' / '_base_' / 'models' /
             'faster-rcnn_r18-slim_fpn.py')


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rounds', type=int, default=40,
                        help='timed rounds, one step of each model per round')
    parser.add_argument('--warmup', type=int, default=3, help='untimed rounds')
    parser.add_argument('--size', type=int, default=256, help='image side (px)')
    parser.add_argument('--batch', type=int, default=2, help='images per batch')
    parser.add_argument('--cells', type=int, default=12, help='cells per image')
    return parser.parse_args()


def build_models():
    init_default_scope('mmdet')
    ce_cfg = Config.fromfile(str(MODEL_CFG)).model
    pu_cfg = copy.deepcopy(ce_cfg)
    pu_cfg.rpn_head.type = 'PURPNHead'
    pu_cfg.rpn_head.loss_cls = dict(type='PULoss', prior=0.035, use_sigmoid=True)
    pu_cfg.roi_head.bbox_head.loss_cls = dict(type='PULoss', prior=0.035)
    ce_model, pu_model = MODELS.build(ce_cfg), MODELS.build(pu_cfg)
    # same initial weights; the PU model additionally holds the prior buffers
    pu_model.load_state_dict(ce_model.state_dict(), strict=False)
    return ce_model, pu_model


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


def main():
    args = parse_args()
    torch.manual_seed(0)
    models = build_models()
    data = make_batch(models[0], args.size, args.batch, args.cells)
    optims = [OptimWrapper(torch.optim.Adam(m.parameters(), lr=1e-3)) for m in models]
    for model in models:
        model.train()
    times = ([], [])
    for round_idx in range(args.warmup + args.rounds):
        for k, (model, optim) in enumerate(zip(models, optims)):
            elapsed = train_step(model, optim, data)
            if round_idx >= args.warmup:
                times[k].append(elapsed)
    ratios = [pu / ce for ce, pu in zip(*times)]
    print(f'threads={torch.get_num_threads()} size={args.size} batch={args.batch} '
          f'rounds={args.rounds} warmup={args.warmup}')
    print(f'CrossEntropyLoss step: median {statistics.median(times[0]) * 1e3:.1f} ms')
    print(f'PULoss step:           median {statistics.median(times[1]) * 1e3:.1f} ms')
    print(f'median ratio PU / CE:  {statistics.median(ratios):.4f}')


if __name__ == '__main__':
    main()
