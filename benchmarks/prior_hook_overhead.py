"""Per-iteration cost of PriorUpdateHook, the extra inference forward of Section 2.3.

Builds the slim Faster R-CNN (configs/_base_/models/faster-rcnn_r18-slim_fpn.py) with the
multi-class PU losses on generated 3-class data and, in ONE process, alternates training
iterations with and without the hook on the same pre-loaded batches, so machine load
affects both alike. Prints the mean time per iteration of each and their ratio for
``interval=1`` (the paper: every batch) and ``interval=10``, for two backbones:

* BN in training mode (the slim model's ``norm_eval=False``): the hook runs a separate
  eval-mode forward, whose breakdown (preprocessing, backbone + neck, RPN proposals,
  RoI head + NMS) is printed;
* BN frozen (``norm_eval=True``, as for pretrained backbones; VGG16 has no BN): the
  training forward's features equal the eval-mode ones and the hook reuses them.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/prior_hook_overhead.py [--iters 20]
        [--size 256] [--batch-size 4]

The model runs on mmengine's default device (a GPU when one is visible).
"""
import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from mmengine.config import Config
from mmengine.runner import Runner

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mmdet_pu.engine.hooks import PriorUpdateHook  # noqa: E402
from tests._data import make_tiny_coco, write_tiny_config  # noqa: E402

MPU_LOSSES = """
model = dict(
    rpn_head=dict(type='PURPNHead', loss_cls=dict(
        _delete_=True, type='PULoss', prior=0.6, use_sigmoid=True)),
    roi_head=dict(bbox_head=dict(num_classes=3, loss_cls=dict(
        _delete_=True, type='MultiPULoss', priors=[0.3, 0.2, 0.1]))))
custom_hooks = [dict(type='PriorUpdateHook', anchor_prior=0.3)]
"""


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--iters', type=int, default=20,
                        help='measured iterations per variant and interval')
    parser.add_argument('--warmup', type=int, default=3)
    parser.add_argument('--size', type=int, default=256, help='image side (px)')
    parser.add_argument('--batch-size', type=int, default=4)
    return parser.parse_args()


def build_runner(work: Path, size: int, batch_size: int, norm_eval: bool) -> Runner:
    make_tiny_coco(work / 'data', n_images=4 * batch_size, size=size, num_classes=3,
                   cells_per_image=12)
    cfg = Config.fromfile(write_tiny_config(
        work / 'config.py', work / 'data', num_classes=3, batch_size=batch_size,
        extra=MPU_LOSSES))
    cfg.work_dir = str(work / f'work_dir_norm_eval_{norm_eval}')
    cfg.model.backbone.norm_eval = norm_eval
    # one process builds two runners: keep their global logger/visualizer apart
    cfg.experiment_name = f'prior_hook_overhead_norm_eval_{norm_eval}'
    cfg.visualizer.name = cfg.experiment_name
    cfg.log_level = 'WARNING'
    runner = Runner.from_cfg(cfg)
    runner.train_loop  # noqa: B018  (builds the loop and the data loader)
    runner.optim_wrapper = runner.build_optim_wrapper(runner.optim_wrapper)
    return runner


def synchronize(device: torch.device) -> None:
    if device.type == 'cuda':
        torch.cuda.synchronize()


def time_iterations(runner, hook, batches, iters, warmup, device):
    """Mean seconds per training iteration without and with the hook, alternating."""
    times = {False: [], True: []}
    for i in range(warmup + iters):
        batch = batches[i % len(batches)]
        # alternate which variant goes first, so drifts in machine load cancel
        for with_hook in ((False, True) if i % 2 else (True, False)):
            runner.train_loop._iter = i
            runner.model.train()
            synchronize(device)
            start = time.perf_counter()
            if with_hook:
                hook.before_train_iter(runner, i, batch)
            runner.model.train_step(batch, runner.optim_wrapper)
            synchronize(device)
            if i >= warmup:
                times[with_hook].append(time.perf_counter() - start)
    return statistics.mean(times[False]), statistics.mean(times[True])


def hook_breakdown(runner, batches, iters, device):
    """Mean seconds of each stage of the hook's inference forward."""
    model = runner.model
    stages = {'preprocess': [], 'backbone+neck': [], 'rpn proposals': [],
              'roi head+nms': []}
    model.eval()
    with torch.no_grad():
        for i in range(iters):
            batch = batches[i % len(batches)]
            marks = [time.perf_counter()]
            data = model.data_preprocessor(batch, False)
            synchronize(device)
            marks.append(time.perf_counter())
            feats = model.extract_feat(data['inputs'])
            synchronize(device)
            marks.append(time.perf_counter())
            proposals = model.rpn_head.predict(feats, data['data_samples'], rescale=False)
            synchronize(device)
            marks.append(time.perf_counter())
            model.roi_head.predict(feats, proposals, data['data_samples'], rescale=False)
            synchronize(device)
            marks.append(time.perf_counter())
            for name, t0, t1 in zip(stages, marks, marks[1:]):
                stages[name].append(t1 - t0)
    model.train()
    return {name: statistics.mean(ts) for name, ts in stages.items()}


def main():
    args = parse_args()
    for norm_eval in (False, True):
        torch.manual_seed(0)
        with tempfile.TemporaryDirectory() as tmp:
            runner = build_runner(Path(tmp), args.size, args.batch_size, norm_eval)
            device = next(runner.model.parameters()).device
            hook = next(h for h in runner.hooks if isinstance(h, PriorUpdateHook))
            hook.before_train(runner)
            runner.model.train()
            reuse = hook._can_reuse_features()
            loader = iter(runner.train_dataloader)
            batches = [next(loader) for _ in range(4)]
            print(f'device={device} threads={torch.get_num_threads()} '
                  f'batch={args.batch_size}x{args.size}px iters={args.iters} '
                  f'norm_eval={norm_eval}: '
                  + ('features of the training forward reused' if reuse
                     else 'separate inference forward'))
            for interval in (1, 10):
                hook.interval = interval
                without, with_hook = time_iterations(
                    runner, hook, batches, args.iters, args.warmup, device)
                print(f'  interval={interval:<3d} without hook {without:.3f} s/it   '
                      f'with hook {with_hook:.3f} s/it   '
                      f'ratio {with_hook / without:.3f}')
            if not reuse:
                stages = hook_breakdown(
                    runner, batches, max(args.iters // 2, 1), device)
                total = sum(stages.values())
                print('  separate inference forward: ' + ', '.join(
                    f'{name} {t:.3f} s ({100 * t / total:.0f}%)'
                    for name, t in stages.items()))


if __name__ == '__main__':
    main()
