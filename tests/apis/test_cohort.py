"""Cohort inference: sharding over processes (torchrun, gloo on CPUs), resume after a
kill, failures recorded, the manifest."""
import csv
import json
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope

from cellio.qupath import read_geojson
from cellio.slides import open_slide
from mmdet.registry import MODELS
from mmdet_pu.apis import cohort_plan
from mmdet_pu.apis import slide as slide_api
from mmdet_pu.apis.cohort import run_cohort
from mmdet_pu.apis.cohort_plan import find_cohort, shard_slides, slide_weight
from mmdet_pu.apis.cohort_records import MANIFEST, RECORDS, read_slide_record
from mmdet_pu.apis.cohort_settings import CohortSettings
from mmdet_pu.apis.tissue import TissueMaskConfig
from mmdet_pu.engine.runner.test_flips import TTA_FLIPS
from tests._data import REPO
from tests.apis._fixtures import BlobDetector, write_slide

TISSUE, NUCLEUS, GLASS = (230, 170, 210), (60, 40, 110), (242, 242, 240)
CLASSES = ('tumor', 'lymphocyte')
# name -> (side in pixels, micrometres per pixel); names sort in the order a single
# process runs them. b_large runs long enough to be killed in the middle of.
SLIDES = {'a_small': (256, 0.5), 'b_large': (768, 0.5), 'c_plain': (320, None),
          'd_mid': (384, 0.5), 'e_mid': (448, 0.25), 'f_small': (288, 0.5)}
SETTINGS = ['--tile', '128', '--overlap', '32', '--score-thr', '0.3', '--device', 'cpu',
            '--no-progress']


def paint_slide(side, seed):
    """Tissue with dark round nuclei, glass along the right edge."""
    rng = np.random.default_rng(seed)
    image = np.full((side, side, 3), TISSUE, np.uint8)
    image[:, side - side // 8:] = GLASS
    for _ in range(side * side // 2000):
        x, y = rng.integers(8, side - side // 8 - 8, 2)
        cv2.circle(image, (int(x), int(y)), 6, NUCLEUS, -1)
    return image


@pytest.fixture(scope='module')
def cohort(module_tmp_path):
    """A tiny randomly initialised slim Faster R-CNN (2 classes, trained at 0.5 um/px by
    its checkpoint), six small pyramid TIFF slides and a corrupt one."""
    root = module_tmp_path
    (root / 'cfg.py').write_text(
        f"_base_ = {str(REPO / 'configs/_base_/models/faster-rcnn_r18-slim_fpn.py')!r}\n"
        "model = dict(roi_head=dict(bbox_head=dict(num_classes=2)))\n"
        f"metainfo = dict(classes={CLASSES!r}, palette=[(220, 20, 60), (0, 0, 230)])\n")
    init_default_scope('mmdet')
    torch.manual_seed(0)
    model = MODELS.build(Config.fromfile(str(root / 'cfg.py')).model)
    torch.save(dict(state_dict=model.state_dict(),
                    meta=dict(dataset_meta=dict(classes=CLASSES, mpp=0.5))),
               root / 'model.pth')
    for seed, (name, (side, mpp)) in enumerate(SLIDES.items()):
        write_slide(root / 'slides' / f'{name}.tif', paint_slide(side, seed), mpp=mpp,
                    levels=2)
    (root / 'slides' / 'corrupt.tif').write_bytes(b'II*\x00 truncated, not a slide')
    return root


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def tool_env():
    bin_dir = str(Path(sys.executable).parent)  # torchrun lives next to python
    return dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS='1',
                PATH=bin_dir + os.pathsep + os.environ.get('PATH', ''), PORT=str(free_port()))


def infer(cohort, out, processes=1, extra=()):
    """Run the tool: ``python tools/infer_slide.py`` (one process) or
    ``tools/dist_infer_slide.sh`` (torchrun); returns the finished process."""
    args = [str(cohort / 'cfg.py'), str(cohort / 'model.pth'), str(cohort / 'slides')]
    if processes == 1:
        command = [sys.executable, 'tools/infer_slide.py', *args]
    else:
        command = ['bash', 'tools/dist_infer_slide.sh', *args, str(processes)]
    return subprocess.run([*command, '--out', str(out), *SETTINGS, *extra], cwd=REPO,
                          env=tool_env(), capture_output=True, text=True, timeout=300)


def manifest(out):
    with open(out / MANIFEST, newline='') as f:
        return {row['slide']: row for row in csv.DictReader(f)}


def outputs(out):
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())
            if p.suffix in ('.geojson', '.csv') and p.name != MANIFEST}


@pytest.fixture(scope='module')
def runs(cohort):
    """The cohort run by one process and by two (torchrun, gloo on CPUs)."""
    results = {}
    for processes in (1, 2):
        out = cohort / f'out{processes}'
        results[processes] = out, infer(cohort, out, processes)
    return results


@pytest.mark.slow
def test_two_processes_write_what_one_writes(runs):
    (one, proc1), (two, proc2) = runs[1], runs[2]
    # exit status 3: some slide failed (torchrun says 1 when a process did not end with 0)
    for proc, status in ((proc1, 3), (proc2, 1)):
        assert proc.returncode == status, proc.stdout[-3000:] + proc.stderr[-3000:]
    # both processes ran slides
    assert '[rank 0]' in proc2.stdout and '[rank 1]' in proc2.stdout, proc2.stdout
    files = outputs(one)
    assert sorted(files) == sorted(f'{name}.{ext}' for name in SLIDES
                                   for ext in ('csv', 'geojson'))
    assert outputs(two) == files  # byte-identical
    rows1, rows2 = manifest(one), manifest(two)
    assert list(rows1) == ['a_small.tif', 'b_large.tif', 'c_plain.tif', 'corrupt.tif',
                           'd_mid.tif', 'e_mid.tif', 'f_small.tif']
    for rows in (rows1, rows2):
        assert rows['corrupt.tif']['status'] == 'failed'
        assert 'corrupt.tif: cannot read the slide' in rows['corrupt.tif']['error']
    for name, row in rows1.items():  # everything but the timing is the same
        assert {k: v for k, v in row.items() if k != 'seconds'} == \
            {k: v for k, v in rows2[name].items() if k != 'seconds'}
    assert 'failed: corrupt.tif' in proc2.stderr


def test_manifest_counts_cells_and_density(runs):
    out = runs[1][0]
    rows = manifest(out)
    for name, (side, mpp) in SLIDES.items():
        row = rows[f'{name}.tif']
        assert row['status'] == 'done' and row['error'] == ''
        with open(out / f'{name}.csv', newline='') as f:
            cells = [r['class'] for r in csv.DictReader(f)]
        assert int(row['cells']) == len(cells) > 0
        assert [int(row[f'cells_{c}']) for c in CLASSES] == [cells.count(c) for c in CLASSES]
        # the tissue: all but the glass strip (a mask of 32 px cells, so within a cell)
        tissue = int(row['tissue_px'])
        assert abs(tissue - side * (side - side // 8)) <= 32 * side
        if mpp is None:  # no resolution: no area in mm^2, no density
            assert row['mpp'] == row['tissue_mm2'] == row['cells_per_mm2'] == ''
        else:
            assert float(row['mpp']) == mpp
            assert float(row['tissue_mm2']) == pytest.approx(tissue * mpp ** 2 / 1e6,
                                                             rel=1e-3)
            assert float(row['cells_per_mm2']) == pytest.approx(
                len(cells) / (tissue * mpp ** 2 / 1e6), rel=1e-3)
        # read at the level of the model's 0.5 um/px: e_mid (0.25) at level 1
        assert row['level'] == ('1' if mpp == 0.25 else '0')


def tree(out):
    """``{name: (inode, mtime_ns)}`` of the output files."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.iterdir()
            if p.is_file()}


def test_tta_on_the_command_line_reaches_every_slides_settings(cohort, tmp_path):
    slide = cohort / 'slides' / 'a_small.tif'
    out = tmp_path / 'tta'
    proc = subprocess.run([sys.executable, 'tools/infer_slide.py', str(cohort / 'cfg.py'),
                           str(cohort / 'model.pth'), str(slide), '--out', str(out),
                           *SETTINGS, '--tta'], cwd=REPO, env=tool_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert read_slide_record(out, slide)['settings']['flips'] == list(TTA_FLIPS)
    assert manifest(out)['a_small.tif']['status'] == 'done'


def test_a_killed_run_resumes_with_only_the_unfinished_slides(cohort, runs):
    out = cohort / 'killed'
    args = [str(cohort / 'cfg.py'), str(cohort / 'model.pth'), str(cohort / 'slides')]
    proc = subprocess.Popen([sys.executable, 'tools/infer_slide.py', *args, '--out',
                             str(out), *SETTINGS], cwd=REPO, env=tool_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:  # kill it (SIGKILL, no clean-up) as soon as the first slide is done
        deadline = time.monotonic() + 120
        while read_slide_record(out, Path('a_small.tif')) is None:
            assert proc.poll() is None and time.monotonic() < deadline, 'no slide finished'
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    finished = {p.stem for p in (out / RECORDS).glob('*.json')}
    assert 'a_small' in finished and 'f_small' not in finished, finished
    assert not (out / 'f_small.geojson').exists()
    before = tree(out)

    rerun = infer(cohort, out)
    assert rerun.returncode == 3, rerun.stderr[-3000:]
    skipped = len([name for name in finished if name != 'corrupt'])  # failed: retried
    assert f'{skipped} of 7 slides already finished' in rerun.stdout
    ran = {line.split(':')[0] for line in rerun.stdout.splitlines() if '.tif: ' in line}
    assert ran == {f'{name}.tif' for name in [*SLIDES, 'corrupt']
                   if name not in finished or name == 'corrupt'}
    after = tree(out)
    for name in finished - {'corrupt'}:  # untouched
        for ext in ('geojson', 'csv'):
            assert after[f'{name}.{ext}'] == before[f'{name}.{ext}']
    assert outputs(out) == outputs(runs[1][0])  # what an uninterrupted run writes
    leftovers = [p.name for p in [*out.iterdir(), *(out / RECORDS).iterdir()]
                 if p.name.endswith('.tmp')]
    assert not leftovers
    assert {row['status'] for name, row in manifest(out).items()
            if name != 'corrupt.tif'} == {'done'}


# ------------------------------------------------------------ in one process --

def blob_slides(root, names=('s1', 's2', 's3')):
    """Pyramid TIFFs of tissue with 16 px dark cells, 0.5 um/px."""
    rng = np.random.default_rng(1)
    paths = []
    for name in names:
        image = np.full((256, 256, 3), TISSUE, np.uint8)
        for x, y in rng.uniform(16, 224, (5, 2)).astype(int):
            image[y:y + 16, x:x + 16] = NUCLEUS
        paths.append(write_slide(root / f'{name}.tif', image, mpp=0.5, levels=2))
    return paths


class Interrupt(BlobDetector):
    """Raises KeyboardInterrupt at its ``at``-th batch, like a kill."""

    def __init__(self, at=None):
        super().__init__(mpp=0.5)
        self.at, self.calls = at, 0

    def test_step(self, data):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return super().test_step(data)


def test_an_interrupted_slide_restarts_cleanly(tmp_path):
    slides = blob_slides(tmp_path / 'slides')
    out = tmp_path / 'out'
    settings = CohortSettings(tile_size=128, overlap=32, batch_size=2, target_mpp=0.5)
    with pytest.raises(KeyboardInterrupt):  # 9 tiles, 5 batches a slide: batch 7 is s2's
        run_cohort(Interrupt(at=7), slides, out, settings, progress=False)
    assert read_slide_record(out, slides[0])['status'] == 'done'
    assert read_slide_record(out, slides[1]) is None
    assert not (out / 's2.geojson').exists() and not (out / 's2.csv').exists()
    # what a SIGKILL in the middle of a write leaves: a temporary sibling
    (out / '.s2.geojson.abc123.tmp').write_text('{"type": "Feat')
    summary = run_cohort(Interrupt(), slides, out, settings, progress=False)
    assert (summary.skipped, summary.run) == (['s1.tif'], ['s2.tif', 's3.tif'])
    assert summary.done == ['s1.tif', 's2.tif', 's3.tif'] and not summary.failed
    assert not list(out.glob('.*.tmp'))
    assert json.loads((out / 's2.geojson').read_text())['type'] == 'FeatureCollection'


def test_failures_are_recorded_and_retried_and_changed_settings_recompute(tmp_path):
    slides = blob_slides(tmp_path / 'slides')
    out = tmp_path / 'out'
    # an ROI outside the 256 px slides: every slide fails with its message
    bad = CohortSettings(roi=(200, 200, 100, 100), tile_size=128, overlap=32)
    summary = run_cohort(BlobDetector(), slides, out, bad, progress=False)
    assert summary.failed == ['s1.tif', 's2.tif', 's3.tif'] and not summary.done
    assert 'is not inside the 256x256 slide' in manifest(out)['s2.tif']['error']

    settings = CohortSettings(tile_size=128, overlap=32)
    summary = run_cohort(BlobDetector(), slides, out, settings, progress=False)
    assert summary.run == ['s1.tif', 's2.tif', 's3.tif']  # failed slides are retried
    assert summary.done == summary.run and not summary.failed
    assert run_cohort(BlobDetector(), slides, out, settings, progress=False).run == []

    changed = CohortSettings(tile_size=128, overlap=32, score_thr=0.4)
    with pytest.warns(UserWarning, match=r'3 slide\(s\) were finished with other settings '
                                         r'\(score_thr: 0.5 -> 0.4\); they are recomputed'):
        summary = run_cohort(BlobDetector(), slides, out, changed, progress=False)
    assert summary.run == ['s1.tif', 's2.tif', 's3.tif']
    summary = run_cohort(BlobDetector(), slides, out, changed, overwrite=True,
                         progress=False)
    assert summary.run == ['s1.tif', 's2.tif', 's3.tif'] and summary.skipped == []

    flipped = CohortSettings(tile_size=128, overlap=32, score_thr=0.4, flips=TTA_FLIPS)
    with pytest.warns(UserWarning, match=r"\(flips: None -> \['horizontal', 'vertical', "
                                         r"'diagonal'\]\); they are recomputed"):
        summary = run_cohort(BlobDetector(), slides, out, flipped, progress=False)
    assert summary.run == ['s1.tif', 's2.tif', 's3.tif']
    assert read_slide_record(out, slides[0])['settings']['flips'] == list(TTA_FLIPS)


# ------------------------------------------------------------------ the plan --

def test_shards_are_balanced_by_weight_and_deterministic():
    weights = [5, 1, 1, 1, 1, 1, 8, 2, 0]
    shards = shard_slides(weights, 2)
    # longest first: 8 -> rank 0, 5 -> 1, 2 -> 1, 1 -> 1, 1 -> 0 (tie: lowest rank), ...
    assert shards == [[2, 4, 6, 8], [0, 1, 3, 5, 7]]
    assert sorted(sum(shards, [])) == list(range(len(weights)))
    loads = [sum(weights[i] for i in shard) for shard in shards]
    assert max(loads) - min(loads) <= max(weights)
    assert shard_slides(weights, 1) == [list(range(len(weights)))]
    assert shard_slides([1, 1], 4) == [[0], [1], [], []]
    assert shard_slides(weights, 3) == shard_slides(list(weights), 3)  # weights only
    with pytest.raises(ValueError, match='world_size must be >= 1'):
        shard_slides(weights, 0)


def test_slide_weight_is_the_tissue_the_model_sees(tmp_path):
    image = np.full((512, 512, 3), GLASS, np.uint8)
    image[:, :256] = TISSUE  # half tissue
    path = write_slide(tmp_path / 'half.tif', image, mpp=0.25, levels=2)
    tissue = TissueMaskConfig(dilate=0)
    # no target: level 0 as it is, the tissue half of the slide
    assert slide_weight(path, CohortSettings(tissue=tissue)) == pytest.approx(256 * 512)
    # a model at 0.5 um/px sees a quarter of the pixels (level 1)
    assert slide_weight(path, CohortSettings(tissue=tissue, target_mpp=0.5)) == \
        pytest.approx(256 * 512 / 4)
    # a model at 1 um/px: level 1 resampled by 1/2
    assert slide_weight(path, CohortSettings(tissue=tissue, target_mpp=1.0)) == \
        pytest.approx(256 * 512 / 16)
    # without a tissue mask: the whole region
    assert slide_weight(path, CohortSettings(tissue=None)) == 512 * 512
    (tmp_path / 'bad.tif').write_bytes(b'nothing')
    assert slide_weight(tmp_path / 'bad.tif', CohortSettings()) == 0.0


def test_the_cohort_is_a_folder_a_file_or_a_list(tmp_path):
    slides = blob_slides(tmp_path / 'slides', names=('x', 'y'))
    assert find_cohort(tmp_path / 'slides') == slides
    assert find_cohort(slides[1]) == [slides[1]]
    listing = tmp_path / 'cohort.txt'
    listing.write_text(f'# study A\nslides/y.tif\n\n{slides[0]}\n')
    assert find_cohort(listing) == [tmp_path / 'slides' / 'y.tif', slides[0]]
    listing.write_text('slides/y.tif\nslides/missing.tif\n')
    with pytest.raises(FileNotFoundError, match=r'cohort.txt line 2: slide file .*missing'):
        find_cohort(listing)
    shutil.copy(slides[0], tmp_path / 'slides' / 'x.svs')
    with pytest.raises(ValueError, match='same outputs: x'):
        find_cohort(tmp_path / 'slides')
    shutil.copy(slides[0], tmp_path / 'manifest.tif')
    with pytest.raises(ValueError, match='called manifest would overwrite'):
        find_cohort(tmp_path / 'manifest.tif')


# ------------------------------------------------------------ QuPath's frame --

BOUNDS = (48, 16, 192, 224)  # openslide.bounds-x, -y, -width, -height (level 0)


def open_with_bounds(path):
    """A slide whose scanned area is :data:`BOUNDS` (as on a MIRAX scan)."""
    reader = open_slide(path)
    reader.bounds = BOUNDS
    return reader


def run_rank(rank, port, slides, out, settings):
    """One process of a two-process cohort run (gloo) on slides with bounds. Spawned, not
    forked (a fork of a process whose OpenMP threads ran can hang), so the patch of
    ``open_slide`` is made here."""
    for module in (cohort_plan, slide_api):
        module.open_slide = open_with_bounds
    torch.distributed.init_process_group('gloo', init_method=f'tcp://127.0.0.1:{port}',
                                         rank=rank, world_size=2)
    try:
        run_cohort(BlobDetector(mpp=0.5), slides, out, settings, progress=False)
    finally:
        torch.distributed.destroy_process_group()


def cell_boxes(out, slide, offset=(0, 0)):
    return sorted(cell.box for cell in
                  read_geojson(out / f'{slide.stem}.geojson', offset=offset).cells)


def test_roi_and_outputs_are_in_qupaths_frame_whatever_the_processes(tmp_path,
                                                                     monkeypatch):
    """On slides with OpenSlide bounds, ``roi`` and the cells are counted from the
    bounds' corner (QuPath's origin): the cells equal those of the same level-0 region
    run in the level-0 frame, shifted by the origin, byte-identically for 1 and 2
    processes; the frame is a setting of the fingerprint."""
    for module in (cohort_plan, slide_api):
        monkeypatch.setattr(module, 'open_slide', open_with_bounds)
    slides = blob_slides(tmp_path / 'slides')
    ox, oy = BOUNDS[:2]
    roi = (16, 16, 160, 192)  # level 0: (64, 32, 160, 192)
    settings = CohortSettings(roi=roi, tile_size=128, overlap=32)
    assert slide_weight(slides[0], replace(settings, tissue=None)) == 160 * 192
    one, two = tmp_path / 'one', tmp_path / 'two'
    summary = run_cohort(BlobDetector(mpp=0.5), slides, one, settings, progress=False)
    assert summary.done == ['s1.tif', 's2.tif', 's3.tif']
    assert read_slide_record(one, slides[0])['origin'] == [ox, oy]
    bounded = {slide: cell_boxes(one, slide) for slide in slides}
    for boxes in bounded.values():
        assert boxes and all(16 <= (x0 + x1) / 2 <= 176 and 16 <= (y0 + y1) / 2 <= 208
                             for x0, y0, x1, y1 in boxes)

    port = free_port()
    processes = [multiprocessing.get_context('spawn').Process(
        target=run_rank, args=(rank, port, slides, two, settings), daemon=True)
        for rank in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(180)
    for process in processes:
        if process.is_alive():  # never leave a process that keeps pytest from exiting
            process.kill()
    assert [process.exitcode for process in processes] == [0, 0]
    assert outputs(two) == outputs(one)  # byte-identical

    level0 = replace(settings, roi=(roi[0] + ox, roi[1] + oy, *roi[2:]), frame='level0')
    with pytest.warns(UserWarning, match=r"frame: 'bounds' -> 'level0'"):
        summary = run_cohort(BlobDetector(mpp=0.5), slides, one, level0, progress=False)
    assert summary.run == ['s1.tif', 's2.tif', 's3.tif']
    assert read_slide_record(one, slides[0])['origin'] == [0, 0]
    for slide, boxes in bounded.items():
        assert cell_boxes(one, slide) == [(x0 + ox, y0 + oy, x1 + ox, y1 + oy)
                                          for x0, y0, x1, y1 in boxes]

    # an ROI inside level 0 but not inside QuPath's 192 x 224 image
    outside = replace(settings, roi=(100, 0, 120, 100))
    assert slide_weight(slides[0], outside) == 0.0
    summary = run_cohort(BlobDetector(mpp=0.5), slides[:1], tmp_path / 'bad', outside,
                         progress=False)
    assert summary.failed == ['s1.tif']
    assert 'is not inside the 192x224 slide' in manifest(tmp_path / 'bad')['s1.tif']['error']
    with pytest.raises(ValueError, match='frame must be one of bounds, level0'):
        CohortSettings(frame='bioformats')
