"""Tiled whole-image inference throughput (megapixels per second) of the slim and R50 models.

Each model is built from its base config (random weights: throughput does not depend on
them, except through the number of boxes NMS sees, which the test config caps) and
predicts a synthetic H&E-like whole image through the same code as ``TiledTestLoop``
(tile, ``test_step`` per tile batch, shift, class-wise NMS merge). The models alternate
image by image so that both see the same machine load; the script prints the median
seconds per image, the megapixels per second and the ratio R50 / slim.

    python benchmarks/tiled_inference_throughput.py --size 1024 --tile 256 --overlap 32
"""
import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope

import mmdet_pu  # noqa: F401
from data_prep.synthetic import generate_image
from mmdet.registry import MODELS
from mmdet.structures import DetDataSample
from mmdet_pu.engine.runner.tiled_loop import TiledInferenceMixin

MODELS_DIR = Path(__file__).resolve().parents[1] / 'configs' / '_base_' / 'models'
CANDIDATES = dict(slim='faster-rcnn_r18-slim_fpn.py', r50='faster-rcnn_r50_fpn.py')


class Tiler(TiledInferenceMixin):
    """The tiling of ``TiledTestLoop`` without a runner."""

    def __init__(self, tile_size, overlap, tile_batch_size):
        self._init_tiling(tile_size, overlap, nms_iou=0.3, tile_batch_size=tile_batch_size,
                          max_per_img=-1)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--size', type=int, default=1024, help='whole image side (px)')
    parser.add_argument('--tile', type=int, default=256)
    parser.add_argument('--overlap', type=int, default=32)
    parser.add_argument('--tile-batch', type=int, default=8)
    parser.add_argument('--rounds', type=int, default=5, help='timed images per model')
    parser.add_argument('--models', nargs='+', default=list(CANDIDATES),
                        choices=list(CANDIDATES))
    return parser.parse_args()


def build_model(name):
    cfg = Config.fromfile(str(MODELS_DIR / CANDIDATES[name]))
    model = MODELS.build(cfg.model)
    return model.eval()


def main():
    args = parse_args()
    torch.manual_seed(0)
    init_default_scope('mmdet')
    rgb = generate_image(np.random.default_rng(0), size=args.size, variant='binary')[0]
    image = torch.from_numpy(np.ascontiguousarray(rgb[..., ::-1])).permute(2, 0, 1)
    meta = dict(img_shape=(args.size, args.size), ori_shape=(args.size, args.size),
                scale_factor=(1.0, 1.0))
    tiler = Tiler(args.tile, args.overlap, args.tile_batch)
    models = {name: build_model(name) for name in args.models}
    times = {name: [] for name in models}
    with torch.no_grad():
        for round_ in range(args.rounds + 1):  # round 0 warms up
            for name, model in models.items():
                start = time.perf_counter()
                tiler.predict_tiled(model.test_step, dict(
                    inputs=[image], data_samples=[DetDataSample(metainfo=dict(meta))]))
                if round_:
                    times[name].append(time.perf_counter() - start)
    megapixels = args.size * args.size / 1e6
    print(f'{args.size} px image, tiles {args.tile}/{args.overlap}, torch threads '
          f'{torch.get_num_threads()}')
    for name, values in times.items():
        median = statistics.median(values)
        print(f'{name:5s} {median:7.2f} s/image  {megapixels / median:6.3f} MPix/s')
    if len(times) == 2:
        slow, fast = statistics.median(times['r50']), statistics.median(times['slim'])
        print(f'ratio r50/slim time per image: {slow / fast:.2f}')


if __name__ == '__main__':
    main()
