"""Whole-slide inference (tools/infer_slide.py's path): throughput and peak memory.

Generates a ``--size`` x ``--size`` synthetic slide (default 20000 x 20000, 1.2 GB of
RGB) as a tiled, zlib-compressed pyramidal TIFF (levels down to 1/32), written tile by
tile so the image never exists in memory: glass with ``--discs`` round tissue islands
textured with the synthetic H&E-like images of data_prep (about 4 % tissue by default,
so the whole slide runs in minutes on a CPU). The slim model (random weights, seeded:
speed depends on them only through the number of boxes the NMS sees) then runs twice:

* **memory**: :func:`mmdet_pu.apis.slide.infer_slide` on the whole slide through
  OpenSlide, tissue mask on; prints tiles run / skipped, MPix/s and the process's peak
  resident memory (``ru_maxrss``: generation, model and inference included) next to the
  slide's size;
* **throughput**: on a ``--roi-size`` region inside a tissue island, ``infer_slide``
  (read + tissue mask + batches + merge) against the bare batched ``test_step`` on the
  same tiles already in memory (the limit), alternating round by round (their order
  swapped every round); prints the median seconds, MPix/s and the throughput ratio
  infer_slide / bare (seconds of bare / seconds of infer_slide; 1.0 = no overhead), and
  the share of infer_slide's time spent in the model's ``test_step`` (measured within
  the same calls, so machine load from other jobs affects it far less than the ratio of
  two timings).

    OMP_NUM_THREADS=1 python benchmarks/slide_inference.py --size 20000 --rounds 3
"""
import argparse
import math
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import tifffile
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import mmdet_pu  # noqa: E402,F401
from data_prep.synthetic import generate_image  # noqa: E402
from mmdet.registry import MODELS  # noqa: E402
from mmdet.structures import DetDataSample  # noqa: E402
from mmdet_pu.apis.slide import infer_slide  # noqa: E402
from mmdet_pu.io.slides import open_slide  # noqa: E402
from mmdet_pu.io.tiling import tile_grid  # noqa: E402

MODEL_CFG = REPO / 'configs' / '_base_' / 'models' / 'faster-rcnn_r18-slim_fpn.py'
GLASS = np.array([242, 242, 240], np.uint8)
TEXTURE = 1024
LEVELS = 6  # downsamples 1 .. 32
FILE_TILE = 256


class SyntheticSlide:
    """Glass with round tissue islands; any region of any level can be rendered."""

    def __init__(self, size, discs, radius, seed=0):
        rng = np.random.default_rng(seed)
        self.size = size
        self.texture = generate_image(rng, size=TEXTURE, variant='binary')[0]
        margin = radius + 1
        self.centres = rng.uniform(margin, size - margin, (discs, 2))
        self.radius = radius

    def render(self, x0, y0, w, h, scale):
        """RGB of level pixels ``[x0, x0+w) x [y0, y0+h)`` at ``scale`` level-0 px/px
        (nearest level-0 sample; pixels beyond the slide are glass)."""
        xs = (np.arange(x0, x0 + w) * scale + scale // 2)[None, :]
        ys = (np.arange(y0, y0 + h) * scale + scale // 2)[:, None]
        tissue = np.zeros((h, w), bool)
        for cx, cy in self.centres:
            if abs(cx - (x0 + w / 2) * scale) > self.radius + w * scale \
                    or abs(cy - (y0 + h / 2) * scale) > self.radius + h * scale:
                continue
            tissue |= (xs - cx) ** 2 + (ys - cy) ** 2 <= self.radius ** 2
        tissue &= (xs < self.size) & (ys < self.size)
        out = np.broadcast_to(GLASS, (h, w, 3)).copy()
        if tissue.any():
            texture = self.texture[ys % TEXTURE, xs % TEXTURE]
            out[tissue] = texture[tissue]
        return out

    def write(self, path):
        """Tiled pyramidal TIFF, one tile in memory at a time."""
        with tifffile.TiffWriter(path) as tif:
            for level in range(LEVELS):
                scale = 2 ** level
                side = math.ceil(self.size / scale)
                tiles = (self.render(x, y, FILE_TILE, FILE_TILE, scale)
                         for y in range(0, side, FILE_TILE)
                         for x in range(0, side, FILE_TILE))
                tif.write(tiles, shape=(side, side, 3), dtype=np.uint8,
                          tile=(FILE_TILE, FILE_TILE), photometric='rgb',
                          compression='zlib', subfiletype=1 if level else 0,
                          metadata=None)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--size', type=int, default=20000, help='slide side (px)')
    parser.add_argument('--discs', type=int, default=5, help='tissue islands')
    parser.add_argument('--radius', type=int, default=1000, help='island radius (px)')
    parser.add_argument('--tile', type=int, default=256)
    parser.add_argument('--overlap', type=int, default=32)
    parser.add_argument('--batch-size', type=int, default=8)
    parser.add_argument('--roi-size', type=int, default=1024,
                        help='side of the throughput region (px)')
    parser.add_argument('--rounds', type=int, default=3, help='timed rounds per variant')
    parser.add_argument('--skip-memory', action='store_true',
                        help='only the throughput comparison')
    return parser.parse_args()


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build_model():
    init_default_scope('mmdet')
    torch.manual_seed(0)
    model = MODELS.build(Config.fromfile(str(MODEL_CFG)).model).eval()
    model.dataset_meta = dict(classes=('cell', ), palette=[(220, 20, 60)])
    return model


class StepTimer:
    """The model, with the seconds spent in its ``test_step`` counted."""

    def __init__(self, model):
        self.model, self.seconds = model, 0.0
        self.cfg, self.dataset_meta = None, model.dataset_meta

    def test_step(self, data):
        start = time.perf_counter()
        outputs = self.model.test_step(data)
        self.seconds += time.perf_counter() - start
        return outputs


def bare_forward(model, tiles, batch_size):
    """The limit: batched ``test_step`` on tiles already in memory."""
    with torch.no_grad():
        for start in range(0, len(tiles), batch_size):
            chunk = tiles[start:start + batch_size]
            model.test_step(dict(inputs=chunk, data_samples=[DetDataSample(metainfo=dict(
                img_shape=t.shape[-2:], ori_shape=t.shape[-2:], scale_factor=(1.0, 1.0)))
                for t in chunk]))


def main():
    args = parse_args()
    settings = dict(tile_size=args.tile, overlap=args.overlap, batch_size=args.batch_size,
                    progress=False)
    slide = SyntheticSlide(args.size, args.discs, args.radius)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / 'synthetic_slide.tif'
        start = time.perf_counter()
        slide.write(path)
        print(f'{args.size} x {args.size} slide ({args.size ** 2 * 3 / 1e9:.2f} GB of RGB, '
              f'{args.discs} tissue islands of radius {args.radius}): written in '
              f'{time.perf_counter() - start:.0f} s, {path.stat().st_size / 1e6:.0f} MB '
              f'on disk; torch threads {torch.get_num_threads()}', flush=True)
        model = build_model()
        with open_slide(path) as reader:
            if not args.skip_memory:
                base = peak_rss_mb()
                result = infer_slide(model, reader, **settings)
                print(f'memory: {result.summary()}; tissue {100 * result.tissue_fraction:.1f}'
                      f' % of the slide; peak RSS {peak_rss_mb():.0f} MB (before inference '
                      f'{base:.0f} MB)', flush=True)

            cx, cy = slide.centres[0]
            half = min(args.roi_size, int(slide.radius * 1.4)) // 2
            roi = (int(cx) - half, int(cy) - half, 2 * half, 2 * half)
            windows = [(roi[0] + x, roi[1] + y, w, h)
                       for x, y, w, h in tile_grid(roi[2], roi[3], args.tile, args.overlap)]
            tiles = [torch.from_numpy(np.ascontiguousarray(
                reader.read_region(0, *w)[..., ::-1].transpose(2, 0, 1))) for w in windows]
            timer = StepTimer(model)
            runs = dict(infer_slide=lambda: infer_slide(timer, reader, roi=roi, **settings),
                        bare=lambda: bare_forward(model, tiles, args.batch_size))
            times = {name: [] for name in runs}
            shares = []
            for round_ in range(args.rounds + 1):  # round 0 warms up
                # the order alternates, so neither variant always runs second
                for name in (runs if round_ % 2 else reversed(list(runs))):
                    timer.seconds = 0.0
                    start = time.perf_counter()
                    output = runs[name]()
                    if round_:
                        times[name].append(time.perf_counter() - start)
                        if name == 'infer_slide':
                            shares.append(timer.seconds / times[name][-1])
                    if name == 'infer_slide':
                        result = output
        assert result.tiles_run == len(windows), (result.tiles_run, len(windows))
        megapixels = sum(w * h for _, _, w, h in windows) / 1e6
        print(f'throughput: ROI {roi[2]} x {roi[3]} px, {len(windows)} tiles '
              f'{args.tile}/{args.overlap}, batch {args.batch_size}, {args.rounds} rounds')
        for name, values in times.items():
            median = statistics.median(values)
            print(f'{name:12s} {median:7.2f} s  {megapixels / median:6.3f} MPix/s (tiles)')
        ratio = statistics.median(times['bare']) / statistics.median(times['infer_slide'])
        print(f'throughput ratio infer_slide / bare: {ratio:.3f} (target >= 0.85)')
        print(f"share of infer_slide's time spent in the model's test_step (same run, so "
              f'immune to machine load): {statistics.median(shares):.3f}')


if __name__ == '__main__':
    main()
