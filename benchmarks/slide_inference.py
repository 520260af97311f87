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
* **cohort** (:func:`mmdet_pu.apis.cohort.run_cohort`, the path of
  ``tools/infer_slide.py`` and ``tools/dist_infer_slide.sh``): ``--cohort-slides``
  synthetic slides of ``--cohort-size`` px (1-4 tissue islands each, so the shards need
  balancing) run by one process and by two (``torchrun``, gloo, on ``--device``; each
  process with ``OMP_NUM_THREADS=1``); prints whether the outputs are byte-identical,
  the wall time of each run and the throughput ratio (2 processes / 1), the peak
  resident memory of every process, and the time a rerun takes to skip the finished
  slides. On CPUs only unless a GPU is present: the GPU part then runs one process per
  GPU (two when there are two), otherwise it prints that it was not measured.

    OMP_NUM_THREADS=1 python benchmarks/slide_inference.py --size 20000 --rounds 3
    python benchmarks/slide_inference.py --cohort-only
"""
import argparse
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
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

from cellio.slides import open_slide  # noqa: E402
from cellio.tiling import window_grid  # noqa: E402
import mmdet_pu  # noqa: E402,F401
from data_prep.synthetic import generate_image  # noqa: E402
from mmdet.registry import MODELS  # noqa: E402
from mmdet.structures import DetDataSample  # noqa: E402
from mmdet_pu.apis.cohort import run_cohort  # noqa: E402
from mmdet_pu.apis.cohort_plan import find_cohort  # noqa: E402
from mmdet_pu.apis.cohort_settings import CohortSettings  # noqa: E402
from mmdet_pu.apis.slide import infer_slide  # noqa: E402
from mmdet_pu.engine.launch import init_distributed  # noqa: E402

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
    parser.add_argument('--score-floor', type=float, default=None,
                        help="the RoI head's test score floor (default: the config's "
                             "0.05; the own-data workflow's returned detector: 0)")
    parser.add_argument('--cohort-slides', type=int, default=8,
                        help='slides of the cohort comparison (default 8)')
    parser.add_argument('--cohort-size', type=int, default=2048,
                        help='side of the cohort slides in px (default 2048)')
    parser.add_argument('--cohort-only', action='store_true',
                        help='only the cohort comparison (1 vs 2 processes, rerun)')
    parser.add_argument('--skip-cohort', action='store_true',
                        help='no cohort comparison')
    parser.add_argument('--cohort-worker', nargs=3, metavar=('SLIDES', 'OUT', 'DEVICE'),
                        help=argparse.SUPPRESS)  # one process of a cohort run (internal)
    return parser.parse_args()


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build_model(score_floor=None):
    init_default_scope('mmdet')
    torch.manual_seed(0)
    cfg = Config.fromfile(str(MODEL_CFG)).model
    if score_floor is not None:
        cfg.test_cfg.rcnn.score_thr = score_floor
    model = MODELS.build(cfg).eval()
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


def cohort_worker(args):
    """One process of a cohort run (started by :func:`cohort_benchmark`): prints a JSON
    line with its rank, the seconds of ``run_cohort``, the slides it ran and its peak
    resident memory."""
    slides_dir, out, device = args.cohort_worker
    rank, world_size = init_distributed('pytorch' if 'RANK' in os.environ else 'none')
    if device == 'cuda':
        device = f'cuda:{torch.cuda.current_device()}'
    model = build_model().to(device)
    settings = CohortSettings(tile_size=args.tile, overlap=args.overlap,
                              batch_size=args.batch_size)
    start = time.perf_counter()
    summary = run_cohort(model, find_cohort(slides_dir), out, settings, progress=False)
    seconds = time.perf_counter() - start
    print('COHORT ' + json.dumps(dict(rank=rank, world_size=world_size, seconds=seconds,
                                      run=len(summary.run), skipped=len(summary.skipped),
                                      peak_rss_mb=peak_rss_mb())), flush=True)


def launch_cohort(slides_dir, out, device, processes):
    """Run the cohort with ``processes`` processes (torchrun when more than one); returns
    the wall time and the JSON reports of the processes."""
    script = str(Path(__file__).resolve())
    worker = ['--cohort-worker', str(slides_dir), str(out), device]
    if processes == 1:
        command = [sys.executable, script, *worker]
    else:
        command = [sys.executable, '-m', 'torch.distributed.run', '--standalone',
                   f'--nproc_per_node={processes}', script, *worker]
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS='1')
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise RuntimeError(f'{command} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}')
    reports = [json.loads(line[len('COHORT '):]) for line in proc.stdout.splitlines()
               if line.startswith('COHORT ')]
    return wall, sorted(reports, key=lambda r: r['rank'])


def outputs(out):
    return {p.name: p.read_bytes() for p in sorted(Path(out).iterdir())
            if p.suffix in ('.geojson', '.csv') and p.name != 'manifest.csv'}


def cohort_benchmark(args):
    """1 vs 2 processes over a synthetic cohort, then a rerun that skips everything."""
    with tempfile.TemporaryDirectory() as tmp:
        slides_dir = Path(tmp) / 'slides'
        slides_dir.mkdir()
        start = time.perf_counter()
        for i in range(args.cohort_slides):
            SyntheticSlide(args.cohort_size, discs=1 + i % 4,
                           radius=args.cohort_size // 8, seed=i).write(
                slides_dir / f'slide{i:02d}.tif')
        print(f'cohort: {args.cohort_slides} slides of {args.cohort_size} x '
              f'{args.cohort_size} px (1-4 tissue islands), written in '
              f'{time.perf_counter() - start:.0f} s; tiles {args.tile}/{args.overlap}, '
              f'batch {args.batch_size}', flush=True)
        devices = [('cpu', 2)]
        if torch.cuda.is_available():
            devices.append(('cuda', min(2, torch.cuda.device_count())))
        for device, most in devices:
            runs = {}
            for processes in sorted({1, most}):
                out = Path(tmp) / f'out_{device}_{processes}'
                runs[processes] = (out, *launch_cohort(slides_dir, out, device, processes))
                wall, reports = runs[processes][1:]
                print(f'{device}, {processes} process(es): {wall:.1f} s wall, run_cohort '
                      f'{max(r["seconds"] for r in reports):.1f} s; slides per process '
                      f'{[r["run"] for r in reports]}; peak RSS per process '
                      f'{[round(r["peak_rss_mb"]) for r in reports]} MB', flush=True)
            if most > 1:
                (out1, wall1, reports1), (out2, wall2, reports2) = runs[1], runs[most]
                same = outputs(out1) == outputs(out2)
                inner = max(r['seconds'] for r in reports1) / max(r['seconds']
                                                                  for r in reports2)
                print(f'{device}: outputs of {most} processes byte-identical to 1 process: '
                      f'{same} ({len(outputs(out1))} files); throughput ratio {most} / 1 '
                      f'processes: {wall1 / wall2:.2f} (wall), {inner:.2f} (run_cohort)',
                      flush=True)
            else:
                print(f'{device}: {most} GPU, the {most}-process comparison needs two: not '
                      'measured', flush=True)
            out = runs[1][0]
            wall, reports = launch_cohort(slides_dir, out, device, 1)
            print(f'{device}: rerun over the finished cohort: {reports[0]["skipped"]} '
                  f'slides skipped, {reports[0]["run"]} run, run_cohort '
                  f'{1000 * reports[0]["seconds"]:.0f} ms ({wall:.1f} s wall with start-up)',
                  flush=True)
            shutil.rmtree(out, ignore_errors=True)
        if not torch.cuda.is_available():
            print('GPU: not measured (no GPU on this machine)', flush=True)


def main():
    args = parse_args()
    if args.cohort_worker:
        return cohort_worker(args)
    if not args.cohort_only:
        single_slide_benchmark(args)
    if not args.skip_cohort:
        cohort_benchmark(args)


def single_slide_benchmark(args):
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
        model = build_model(args.score_floor)
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
                       for x, y, w, h in window_grid(roi[2], roi[3], args.tile, args.overlap)]
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
