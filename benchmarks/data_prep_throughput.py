"""Throughput and peak memory of tiling a large TIFF through the region reader.

Generates a ``--size`` x ``--size`` RGB TIFF (default 10000 x 10000 = 300 MB of pixels;
tiled 512 x 512 zlib, or one uncompressed strip per ``--rows-per-strip`` rows), written
tile by tile so the generator itself never holds the image. Then, each in a fresh
subprocess so that its peak resident memory (``ru_maxrss``) is its own:

* ``read``: every 500 x 500 region of the MITOS tile grid (overlap 100) through
  :class:`cellio.tiff.TiffRegionReader`;
* ``write``: :func:`data_prep.writer.write_dataset` on the image (a training image:
  tiles only, PNG encoding included) into a temporary output.

Prints source megapixels per second and the resident-memory high-water mark above the
process's size after its imports (with ``--trace-allocations`` also the peak of
Python/numpy allocations), next to the size of the full image::

    OMP_NUM_THREADS=1 python benchmarks/data_prep_throughput.py --size 10000
    OMP_NUM_THREADS=1 python benchmarks/data_prep_throughput.py --layout strips
"""
import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import tifffile

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from cellio.tiff import TiffRegionReader  # noqa: E402
from cellio.tiling import tile_grid  # noqa: E402
from data_prep.writer import SourceImage, write_dataset  # noqa: E402

TILE, OVERLAP = 500, 100


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--size', type=int, default=10000, help='image side (px)')
    parser.add_argument('--layout', choices=('tiled', 'strips'), default='tiled',
                        help='tiled 512 x 512 zlib, or uncompressed strips')
    parser.add_argument('--rows-per-strip', type=int, default=64)
    parser.add_argument('--workdir', type=Path, default=None,
                        help='where the TIFF and the output go (default: a temporary '
                             'folder, removed afterwards)')
    parser.add_argument('--trace-allocations', action='store_true',
                        help='also report the peak of Python/numpy allocations '
                             '(tracemalloc; slows the run down)')
    parser.add_argument('--measure', choices=('read', 'write'), help=argparse.SUPPRESS)
    parser.add_argument('--tiff', type=Path, help=argparse.SUPPRESS)
    return parser.parse_args()


def he_like_tiles(size, tile, seed=0):
    """Pinkish noisy tiles of a ``size`` x ``size`` image, row by row (tifffile order)."""
    rng = np.random.default_rng(seed)
    base = np.array([200, 150, 190], np.int16)
    for _ in range(math.ceil(size / tile) ** 2):
        noise = rng.integers(-25, 26, (tile, tile, 1), dtype=np.int16)
        yield np.clip(base + noise, 0, 255).astype(np.uint8)


def write_tiff(path, size, layout, rows_per_strip):
    if layout == 'tiled':
        tifffile.imwrite(path, he_like_tiles(size, 512), shape=(size, size, 3),
                         dtype=np.uint8, photometric='rgb', tile=(512, 512),
                         compression='zlib', compressionargs=dict(level=1))
    else:  # strips: write one strip band at a time through a memory-mapped file
        out = tifffile.memmap(path, shape=(size, size, 3), dtype=np.uint8,
                              photometric='rgb', rowsperstrip=rows_per_strip)
        for y0, band in zip(range(0, size, 512), he_like_tiles(size, 512)):
            out[y0:y0 + 512] = band[:min(512, size - y0), :1].repeat(size, axis=1)
        out.flush()
        del out


def status_bytes(field):
    """A memory field of /proc/self/status (``VmRSS``, ``VmHWM``) in bytes."""
    for line in Path('/proc/self/status').read_text().splitlines():
        if line.startswith(f'{field}:'):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def reset_peak_rss():
    """Reset the kernel's resident high-water mark (VmHWM) to the current RSS."""
    Path('/proc/self/clear_refs').write_text('5')


def measure(mode, tiff, trace_allocations):
    """Run one measurement in this process; prints a JSON line.

    Memory: the resident high-water mark above the resident size at the start (the
    kernel's VmHWM, reset after the imports) and, optionally, the peak of Python/numpy
    allocations (tracemalloc).
    """
    reset_peak_rss()
    baseline = status_bytes('VmRSS')
    if trace_allocations:
        tracemalloc.start()
    start = time.perf_counter()
    with TiffRegionReader(tiff) as reader:
        width, height = reader.width, reader.height
        if mode == 'read':
            for x0, y0, w, h in tile_grid(width, height, TILE, OVERLAP):
                reader.read_region(x0, y0, w, h)
        else:
            image = SourceImage(source='slide.tif', group='slide', reader=reader,
                                width=width, height=height, labels=[1, 1],
                                points=[[10, 20], [width - 5, height - 7]])
            splits = dict(assignment={'slide': ['train']}, folds=[dict(train=['slide'],
                                                                       test=[])])
            with tempfile.TemporaryDirectory(dir=tiff.parent) as tmp:
                write_dataset(Path(tmp) / 'out', ['cell'], [image], splits, tile=TILE,
                              overlap=OVERLAP, box_size=32, progress=False)
    seconds = time.perf_counter() - start
    traced_peak = tracemalloc.get_traced_memory()[1] if trace_allocations else None
    tracemalloc.stop()
    print(json.dumps(dict(mode=mode, seconds=seconds, mpix=width * height / 1e6,
                          rss_peak_above_start=status_bytes('VmHWM') - baseline,
                          traced_peak=traced_peak, baseline=baseline)))


def main():
    args = parse_args()
    if args.measure:
        return measure(args.measure, args.tiff, args.trace_allocations)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        tiff = Path(tmp) / 'slide.tif'
        start = time.perf_counter()
        write_tiff(tiff, args.size, args.layout, args.rows_per_strip)
        print(f'generated {args.size}x{args.size} {args.layout} TIFF '
              f'({tiff.stat().st_size / 1e6:.0f} MB on disk, '
              f'{args.size ** 2 * 3 / 1e6:.0f} MB of pixels) in '
              f'{time.perf_counter() - start:.1f} s')
        for mode in ('read', 'write'):
            command = [sys.executable, __file__, '--measure', mode, '--tiff', str(tiff)]
            if args.trace_allocations:
                command.append('--trace-allocations')
            proc = subprocess.run(command, capture_output=True, text=True, check=True)
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            traced = ('' if r['traced_peak'] is None else
                      f", peak allocations {r['traced_peak'] / 1e6:.1f} MB")
            print(f"{mode:<5}: {r['mpix'] / r['seconds']:7.1f} MPix/s "
                  f"({r['seconds']:.1f} s), peak RSS above start "
                  f"{r['rss_peak_above_start'] / 1e6:.1f} MB{traced} (RSS at start "
                  f"{r['baseline'] / 1e6:.0f} MB)")


if __name__ == '__main__':
    main()
