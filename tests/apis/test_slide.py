"""Whole-slide inference: readers, tissue mask, lazy batched tiles, merge, QuPath outputs."""
import csv
import json
import os
import re
import subprocess
import sys
import threading
import time

import cv2
import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.structures import InstanceData

from mmdet_pu.apis.cohort_records import read_slide_record
from mmdet_pu.apis.cohort_settings import CohortSettings, model_settings
from mmdet_pu.apis.resolution import (ResolutionPlan, ResolutionWarning, check_roi,
                                      plan_resolution)
from mmdet_pu.apis.slide import infer_slide
from mmdet_pu.apis.slide_model import (input_format, slide_dataset_meta, slide_defaults,
                                       training_mpp)
from mmdet_pu.apis.tissue import TissueMaskConfig, compute_tissue_mask, tissue_pixels
from mmdet_pu.engine.runner import merge_tile_predictions
from mmdet_pu.engine.runner.tile_merge import fuse_slide_detections, merge_slide_detections
from cellio.detection_writers import write_slide_outputs
from cellio.slides import OpenSlideReader, open_slide
from cellio.tiling import window_grid
from cellio.qupath import read_geojson
from mmdet_pu.models.detectors.box_fusion import fuse_detections
from tests._cli import run_script
from tests._data import REPO
from tests.apis._fixtures import (BACKGROUND, CELLS, NUCLEUS, TISSUE, BlobDetector,
                                  BlobEnsemble, RecordingReader, make_slide_image,
                                  write_slide)
from tests._qupath_fixtures import (feature, paint_cells, point, write_features, write_png,
                                    write_pyramid_tiff)


def cell_boxes(offset=(0, 0), cells=CELLS):
    dx, dy = offset
    return sorted([float(x + dx), float(y + dy), float(x + dx + 16), float(y + dy + 16)]
                  for x, y in cells)


@pytest.fixture
def pyramid(tmp_path):
    return write_pyramid_tiff(tmp_path / 'slide.tif', make_slide_image(), tile=64)


def test_package_imports_stay_light_and_never_reach_data_prep():
    """mmdet_pu is installed without data_prep; ``mmdet_pu.apis`` imports none of its
    modules (``from mmdet_pu.apis import runs`` loads no slide reader, no OpenSlide)."""
    pattern = re.compile(r'^\s*(from|import)\s+data_prep\b', re.MULTILINE)
    offenders = [str(p.relative_to(REPO)) for p in (REPO / 'mmdet_pu').rglob('*.py')
                 if pattern.search(p.read_text())]
    assert not offenders
    code = ("import sys; import mmdet_pu.apis; "
            "loaded = {m for m in sys.modules if m.startswith(('mmdet_pu.apis.', "
            "'openslide', 'data_prep'))}; assert not loaded, loaded")
    subprocess.run([sys.executable, '-c', code], cwd=REPO, check=True, timeout=120,
                   env=dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS='1'))


# --------------------------------------------------------------------- tissue mask --

def test_tissue_rule():
    colours = np.array([[BACKGROUND, TISSUE, NUCLEUS, (0, 0, 0), (200, 200, 200),
                         (120, 120, 120)]], np.uint8)
    # glass, pale pink stroma (saturated), nucleus (dark), black (empty), light grey,
    # dark grey (optical density 0.33)
    assert tissue_pixels(colours).tolist() == [[False, True, True, False, False, True]]


def test_tissue_mask_skips_the_blank_area(pyramid):
    with open_slide(pyramid) as slide:
        reader = RecordingReader(slide)
        mask = compute_tissue_mask(reader, (0, 0, 640, 480), TissueMaskConfig(
            downsample=16, dilate=32))
        # read from level 2 (downsample 4) averaged by 4: one block, 160 x 120 pixels
        assert reader.reads == [(2, 0, 0, 160, 120)]
        assert mask.scale == 16 and mask.mask.shape == (30, 40)
        # tissue x < 320, dilated by 32 px: columns < 352 / 16 = 22
        assert mask.mask[:, :22].all() and not mask.mask[:, 22:].any()
        assert mask.covers(330, 0, 340, 10) and not mask.covers(360, 0, 640, 480)

        model = BlobDetector()
        result = infer_slide(model, reader, tile_size=128, overlap=32, progress=False,
                             tissue=TissueMaskConfig(dilate=32))
        # tile columns start at 0, 96, 192, 288, 384, 480, 512; rows at 0, 96, 192,
        # 288, 352: the 3 columns right of x = 352 (glass) are skipped
        assert (result.tiles_run, result.tiles_skipped) == (20, 15)
        assert {x for level, x, _, _, _ in reader.reads if level == 0} == {0, 96, 192, 288}
        assert sorted(result.bboxes.tolist()) == cell_boxes()
        # the tissue share before the dilation: x < 320 of 640
        assert result.tissue_fraction == pytest.approx(20 / 40)

        # a region of glass only: nothing runs, nothing is found
        empty = infer_slide(model, slide, roi=(400, 0, 240, 480), tile_size=128,
                            overlap=32, progress=False)
        assert (empty.tiles_run, len(empty.scores)) == (0, 0)


# ---------------------------------------------------------- tiles, batches, merge --

@pytest.mark.parametrize('level', [0, 1])
def test_tiles_cover_the_roi_exactly_in_bounded_batches(pyramid, level):
    roi = (40, 24, 500, 420)
    with open_slide(pyramid) as slide:
        reader = RecordingReader(slide)
        model = BlobDetector(cell_size=16 // 2 ** level)
        result = infer_slide(model, reader, roi=roi, level=level, tile_size=96, overlap=24,
                             batch_size=3, tissue=None, progress=False)
    scale = 2 ** level
    covered = np.zeros((480 // scale, 640 // scale), np.int32)
    for read_level, x, y, w, h in reader.reads:
        assert read_level == level and w <= 96 and h <= 96
        covered[y:y + h, x:x + w] += 1
    x, y, w, h = (v // scale for v in roi)
    assert (covered[y:y + h, x:x + w] > 0).all()
    covered[y:y + h, x:x + w] = 0
    assert not covered.any()  # nothing outside the ROI was read
    windows = window_grid(w, h, 96, 24)
    assert result.tiles_run == len(reader.reads) == len(windows)
    assert [len(batch) for batch in model.batches] == \
        [3] * (len(windows) // 3) + ([len(windows) % 3] if len(windows) % 3 else [])
    # level-0 boxes, ROI offset included; every cell of the ROI once
    inside = [(cx, cy) for cx, cy in CELLS if cx >= 40 and cy >= 24]
    if level == 0:
        assert sorted(result.bboxes.tolist()) == cell_boxes(cells=inside)
    else:  # a 16 px cell is 8 px at level 1: boxes scaled back, within a pixel or two
        assert np.allclose(sorted(result.bboxes.tolist()), cell_boxes(cells=inside),
                           atol=2)


def test_cells_on_tile_borders_are_found_once(pyramid):
    with open_slide(pyramid) as slide:
        kept = infer_slide(BlobDetector(), slide, tile_size=128, overlap=32, tissue=None,
                           score_thr=0.0, progress=False)
        # the tiles' raw detections hold the duplicates the merge removes
        raw = []
        for x, y, w, h in window_grid(640, 480, 128, 32):
            tile = slide.read_region(0, x, y, w, h)
            gray = tile.mean(2)
            count = cv2.connectedComponents((gray < 100).astype(np.uint8))[0] - 1
            raw.append(count)
    assert sum(raw) > len(CELLS)
    assert sorted(kept.bboxes.tolist()) == cell_boxes()
    assert kept.scores.tolist() == [1.0] * len(CELLS)  # the whole cell, not a cut part


def test_slide_defaults_are_the_test_settings_of_the_config():
    cfg = Config.fromfile(str(REPO / 'configs/synthetic/synthetic_multi_cap2_mpu.py'))
    assert slide_defaults(cfg) == dict(tile_size=256, nms_iou=0.3, class_agnostic=False,
                                       flips=())
    cfg.merge_from_dict({'test_cfg.class_agnostic': True, 'test_cfg.nms_iou': 0.4,
                         'test_cfg.flips': ['vertical']})
    assert slide_defaults(cfg) == dict(tile_size=256, nms_iou=0.4, class_agnostic=True,
                                       flips=('vertical', ))
    # without a TiledTestLoop: the model's test NMS
    plain = Config(dict(model=dict(test_cfg=dict(rcnn=dict(nms=dict(
        type='nms', iou_threshold=0.5, class_agnostic=True))))))
    assert slide_defaults(plain) == dict(tile_size=512, nms_iou=0.5, class_agnostic=True,
                                         flips=())


@pytest.mark.parametrize('class_agnostic', [False, True])
def test_merge_by_regions_equals_one_nms_over_the_slide(class_agnostic):
    rng = np.random.default_rng(0)
    centres = rng.uniform(0, 5000, (3000, 2))
    sizes = rng.uniform(10, 30, (3000, 1))
    boxes = np.concatenate([centres - sizes / 2, centres + sizes / 2], 1)
    # every cell seen twice more, slightly moved (overlapping tiles), other scores
    boxes = np.concatenate([boxes, boxes + rng.normal(0, 2, boxes.shape),
                            boxes + rng.normal(0, 2, boxes.shape)]).astype(np.float32)
    scores = rng.uniform(0.5, 1, len(boxes)).astype(np.float32)
    labels = np.tile(rng.integers(0, 2, 3000), 3)
    merged = merge_slide_detections(boxes, scores, labels, nms_iou=0.3,
                                    class_agnostic=class_agnostic, region=256)
    reference = merge_tile_predictions([InstanceData(
        bboxes=torch.from_numpy(boxes), scores=torch.from_numpy(scores),
        labels=torch.from_numpy(labels))], [(0, 0)], nms_iou=0.3,
        class_agnostic=class_agnostic)
    assert len(merged[0]) < len(boxes) / 2
    assert sorted(map(tuple, np.column_stack(merged).tolist())) == sorted(map(
        tuple, np.column_stack([reference.bboxes.numpy(), reference.scores.numpy(),
                                reference.labels.numpy()]).tolist()))
    assert (np.diff(merged[1]) <= 0).all()  # by descending score


def _sorted_rows(bboxes, scores, labels):
    rows = np.column_stack([bboxes, scores, labels]).astype(np.float64)
    return rows[np.lexsort(rows.T[::-1])]


def test_fusion_by_regions_equals_one_fusion_over_the_slide():
    rng = np.random.default_rng(1)
    centres = rng.uniform(0, 5000, (2000, 2))
    sizes = rng.uniform(10, 30, (2000, 1))
    cells = np.concatenate([centres - sizes / 2, centres + sizes / 2], 1)
    labels = rng.integers(0, 2, 2000)
    members = []
    for found in (0.9, 0.7, 0.5):  # each member finds some cells, its boxes a bit off
        take = rng.random(2000) < found
        members.append(((cells[take] + rng.normal(0, 1.5, (take.sum(), 4))).astype(
            np.float32), rng.uniform(0.05, 1, take.sum()).astype(np.float32),
            labels[take]))
    ensemble = BlobEnsemble([BlobDetector() for _ in members], weights=[1, 1, 2])
    fused = fuse_slide_detections(members, ensemble.fuse, region=256)
    whole = fuse_detections(*([torch.from_numpy(m[k]) for m in members] for k in range(3)),
                            iou_thr=0.55, weights=[1, 1, 2])
    assert len(fused[0]) < 0.6 * sum(len(m[0]) for m in members)  # clusters formed
    np.testing.assert_allclose(_sorted_rows(*fused),
                               _sorted_rows(*(t.numpy() for t in whole)), atol=1e-4)
    assert (np.diff(fused[1]) <= 0).all()  # by descending score


def test_an_ensemble_is_fused_after_each_members_tiles_are_merged(pyramid):
    # a whole 16 px cell scores 1 for the first member and 256 / 24 ** 2 for the second
    members = [BlobDetector(), BlobDetector(cell_size=24)]
    ensemble = BlobEnsemble(members, weights=[1, 1])
    settings = dict(tile_size=128, overlap=32, tissue=None, progress=False)
    with open_slide(pyramid) as slide:
        result = infer_slide(ensemble, slide, score_thr=0.5, **settings)
        # the reference: each member's whole-slide detections, fused over the slide
        alone = [infer_slide(member, slide, score_thr=0.0, **settings)
                 for member in members]
    # each cell once, those on tile borders too (fused boxes: weighted means)
    np.testing.assert_allclose(sorted(result.bboxes.tolist()), cell_boxes(), atol=1e-4)
    # the second member's 0.44 counts although it is below score_thr
    assert result.scores.tolist() == pytest.approx([(1 + 256 / 24 ** 2) / 2] * len(CELLS))
    whole = fuse_detections(*([torch.from_numpy(getattr(r, key)) for r in alone]
                              for key in ('bboxes', 'scores', 'labels')), iou_thr=0.55)
    keep = whole[1] >= 0.5
    np.testing.assert_allclose(_sorted_rows(result.bboxes, result.scores, result.labels),
                               _sorted_rows(*(t[keep].numpy() for t in whole)), atol=1e-5)


def test_reader_thread_stays_a_few_batches_ahead_and_reports_errors(pyramid):
    with open_slide(pyramid) as slide:
        reader = RecordingReader(slide)
        consumed = []

        def on_forward():
            time.sleep(0.02)  # a slow model: the reader runs ahead as far as it may
            ahead = len(reader.reads) - sum(consumed)
            assert ahead <= (2 + 2) * 2, ahead  # prefetch 2, batch 2
            consumed.append(2)

        infer_slide(BlobDetector(on_forward), reader, tile_size=64, overlap=0,
                    batch_size=2, prefetch=2, tissue=None, progress=False)
        assert len(consumed) == len(window_grid(640, 480, 64, 0)) // 2

        class Failing(RecordingReader):
            def _read(self, level, x, y, w, h):
                if len(self.reads) == 5:
                    raise OSError('disk gone')
                return super()._read(level, x, y, w, h)

        threads = threading.active_count()
        with pytest.raises(OSError, match='disk gone'):
            infer_slide(BlobDetector(), Failing(slide), tile_size=64, overlap=0,
                        tissue=None, progress=False)
        assert threading.active_count() == threads  # the reader thread has ended


def test_test_pipeline_settings_are_honoured(pyramid):
    from mmengine.config import Config

    def config(*steps):
        return Config(dict(test_dataloader=dict(dataset=dict(pipeline=list(steps)))))

    fmt = input_format(config(dict(type='LoadImageFromFile', channel_order='rgb'),
                              dict(type='Resize', scale_factor=2.0)))
    assert (fmt.channel_order, fmt.scale_factor) == ('rgb', 2.0)
    with pytest.raises(ValueError, match='fixed scale'):
        input_format(config(dict(type='Resize', scale=(1333, 800), keep_ratio=True)))

    # tiles enlarged twice by the pipeline's Resize; boxes come back in slide pixels
    model = BlobDetector()
    model.cfg = config(dict(type='LoadImageFromFile'), dict(type='Resize', scale_factor=2.0))
    with open_slide(pyramid) as slide:
        result = infer_slide(model, slide, tile_size=128, overlap=32, tissue=None,
                             progress=False)
    assert {shape for batch in model.batches for shape in batch} == {(256, 256)}
    assert np.allclose(sorted(result.bboxes.tolist()), cell_boxes(), atol=1)


# ------------------------------------------------------------------------ outputs --

def test_outputs_reimport_in_qupath_format(pyramid, tmp_path):
    with open_slide(pyramid) as slide:
        result = infer_slide(BlobDetector(), slide, roi=(8, 8, 600, 460), tile_size=128,
                             overlap=32, tissue=None, progress=False)
    geojson, table = write_slide_outputs(result, tmp_path / 'out')
    assert (geojson.name, table.name) == ('slide.geojson', 'slide.csv')
    names = sorted(p.name for p in (tmp_path / 'out').iterdir())
    assert names == ['slide.csv', 'slide.geojson']  # no temporary file left behind
    features = json.loads(geojson.read_text())['features']
    assert {f['properties']['objectType'] for f in features} == {'detection'}
    assert features[0]['properties']['classification'] == dict(
        name='cell', color=[255, 0, 0], colorRGB=-65536)  # 0.3 reads the packed colorRGB
    qupath = read_geojson(geojson)
    assert sorted(list(c.box) for c in qupath.cells) == cell_boxes()
    assert {(c.label, c.score) for c in qupath.cells} == {('cell', 1.0)}
    assert qupath.colors == {'cell': (255, 0, 0)}
    with open(table, newline='') as f:
        rows = list(csv.DictReader(f))
    assert sorted((float(r['x']), float(r['y'])) for r in rows) == sorted(
        (x + 8.0, y + 8.0) for x, y in CELLS)
    assert {(r['class'], float(r['score'])) for r in rows} == {('cell', 1.0)}
    assert 'slide.tif: 6 cells (cell 6); level 0; tiles 30 run, 0 skipped' in result.summary()


def test_roi_check():
    assert check_roi(None, (640, 480), 's.tif') == (0, 0, 640, 480)
    with pytest.raises(ValueError, match=r's.tif: ROI x=600 y=0 w=50 h=10 is not inside '
                                         r'the 640x480 slide'):
        check_roi((600, 0, 50, 10), (640, 480), 's.tif')


def test_command_line_refuses_bad_input_before_the_model_loads(tmp_path):
    """Bad options and clashing slide names fail at once (the config c.py does not even
    exist), with exit status 2 and nothing written."""
    (tmp_path / 'a.tif').touch()
    (tmp_path / 'a.svs').touch()
    for options, message in [([str(tmp_path)], 'same outputs: a'),  # both: a.geojson
                             ([str(tmp_path / 'a.tif'), '--target-mpp', '0'],
                              'expected a number > 0'),
                             ([str(tmp_path / 'a.tif'), '--roi', '1,2,0,4'],
                              'expected x, y >= 0 and w, h > 0'),
                             ([str(tmp_path / 'a.tif'), '--frame', 'bioformats'],
                              "invalid choice: 'bioformats'")]:
        proc = run_script('tools/infer_slide.py', 'c.py', 'x.pth', *options, '--out',
                          tmp_path / 'o')
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not (tmp_path / 'o').exists()


# ------------------------------------------------------------ issue 11 round trip --

def run_tool(*args):
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS='1')
    proc = subprocess.run([sys.executable, *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, f'{args} failed:\n{proc.stdout[-3000:]}\n' \
                                 f'{proc.stderr[-5000:]}'
    return proc.stdout


@pytest.mark.slow
def test_qupath_round_trip_prepare_train_infer_reimport(tmp_path):
    """QuPath export -> prepare.py qupath -> 2 training iterations -> infer_slide ->
    the GeoJSON re-imports with the cells of the CSV."""
    rng = np.random.default_rng(0)
    for i in range(6):  # 4:1:1 split: every split gets an image
        points = rng.uniform(20, 236, (6, 2))
        image = paint_cells(np.full((256, 256, 3), TISSUE, np.uint8), points, radius=8)
        write_png(tmp_path / 'src' / f'img{i}.png', image)
        write_features(tmp_path / 'src' / f'img{i}.geojson', [  # a few cells annotated
            feature(point(float(x), float(y)), name='cell') for x, y in points[:3]])
    run_tool('data_prep/prepare.py', 'qupath', '--src', tmp_path / 'src',
             '--out', tmp_path / 'data')
    root = f"{tmp_path / 'data'}/"
    run_tool('tools/train.py', 'configs/custom/custom_pu.py', '--work-dir', tmp_path / 'work',
             '--cfg-options', *(f'{split}_dataloader.dataset.data_root={root}'
                                for split in ('train', 'val', 'test')),
             'train_cfg.max_iters=2', 'default_hooks.checkpoint.interval=2',
             'train_dataloader.batch_size=2',
             *(f'{split}_dataloader.{key}' for split in ('train', 'val')
               for key in ('num_workers=0', 'persistent_workers=False')))
    slide = make_slide_image()
    (tmp_path / 'slides').mkdir()
    write_pyramid_tiff(tmp_path / 'slides' / 'case1.tif', slide, levels=2, tile=128)
    out = run_tool('tools/infer_slide.py', 'configs/custom/custom_pu.py',
                   tmp_path / 'work' / 'iter_2.pth', tmp_path / 'slides',
                   '--out', tmp_path / 'out', '--roi', '16,8,500,400', '--score-thr', '0',
                   '--batch-size', '4', '--device', 'cpu', '--frame', 'level0')
    summary = re.search(r'case1.tif: (\d+) cells \(cell (\d+)\); level 0; tiles (\d+) run, '
                        r'(\d+) skipped', out)
    assert summary, out
    cells, run, skipped = int(summary[1]), int(summary[3]), int(summary[4])
    # 256 px tiles (the config's TiledTestLoop), overlap 64: 3 x 2 windows, each with
    # some tissue (x < 320, dilated); 2 iterations give low scores, but boxes
    assert (run, skipped) == (6, 0) and cells > 0
    record = read_slide_record(tmp_path / 'out', tmp_path / 'slides' / 'case1.tif')
    assert record['settings']['frame'] == 'level0' and record['origin'] == [0, 0]

    qupath = read_geojson(tmp_path / 'out' / 'case1.geojson')
    with open(tmp_path / 'out' / 'case1.csv', newline='') as f:
        rows = list(csv.DictReader(f))
    assert len(qupath.cells) == len(rows) == cells
    assert qupath.colors == {'cell': (75, 230, 57)}  # the config's metainfo palette
    for cell, row in zip(qupath.cells, rows):
        x0, y0, x1, y1 = cell.box
        assert (cell.label, row['class']) == ('cell', 'cell')
        assert (x0 + x1) / 2 == pytest.approx(float(row['x']), abs=0.01)
        assert (y0 + y1) / 2 == pytest.approx(float(row['y']), abs=0.01)
        assert cell.score == pytest.approx(float(row['score']), abs=1e-4)
        assert 16 <= x0 < x1 <= 516 and 8 <= y0 < y1 <= 408  # level-0, inside the ROI


def test_qupath_frame_of_a_slide_with_bounds(pyramid, tmp_path):
    """A slide with ``openslide.bounds-*`` (MIRAX): QuPath's OpenSlide server shows only
    the bounds, with its origin at their corner, so ``roi`` and every output are counted
    from there; the GeoJSON re-imported with that offset gives the level-0 cells."""
    import openslide

    class BoundedSlide:
        def __init__(self, slide, bounds):
            self._slide, self.level_dimensions = slide, slide.level_dimensions
            self.level_downsamples = slide.level_downsamples
            self.properties = {f'openslide.bounds-{k}': str(v) for k, v in
                               zip(('x', 'y', 'width', 'height'), bounds)}

        def read_region(self, *args):
            return self._slide.read_region(*args)

        def close(self):
            self._slide.close()

    bounds = (64, 32, 512, 440)
    reader = OpenSlideReader(BoundedSlide(openslide.OpenSlide(str(pyramid)), bounds), pyramid)
    assert reader.qupath_frame() == bounds
    assert reader.qupath_frame(use_bounds=False) == (0, 0, 640, 480)
    with reader:
        whole = infer_slide(BlobDetector(), reader, tile_size=128, overlap=32, tissue=None,
                            progress=False)
        assert whole.origin == (64, 32) and whole.roi == (0, 0, 512, 440)
        assert np.allclose(sorted(whole.bboxes.tolist()),
                           cell_boxes((-64, -32), CELLS[1:]), atol=1)  # (20, 20) is outside
        result = infer_slide(BlobDetector(), reader, roi=(0, 0, 120, 120), tile_size=128,
                             overlap=32, tissue=None, progress=False)
        level0 = infer_slide(BlobDetector(), reader, roi=(64, 32, 120, 120), tile_size=128,
                             overlap=32, tissue=None, progress=False, use_bounds=False)
        with pytest.raises(ValueError, match=r'ROI x=500 y=0 w=20 h=10 is not inside the '
                                             r'512x440 slide'):
            infer_slide(BlobDetector(), reader, roi=(500, 0, 20, 10), progress=False)
    assert np.allclose(sorted(result.bboxes.tolist()), cell_boxes((-64, -32), CELLS[1:4:2]),
                       atol=1)
    assert np.allclose(sorted(level0.bboxes.tolist()), cell_boxes((0, 0), CELLS[1:4:2]),
                       atol=1)
    geojson, table = write_slide_outputs(result, tmp_path / 'out')
    qupath = read_geojson(geojson, offset=(64, 32))
    assert np.allclose(sorted(list(c.box) for c in qupath.cells), cell_boxes((0, 0), CELLS[1:4:2]),
                       atol=1)
    with open(table, newline='') as f:
        centres = sorted((float(r['x']), float(r['y'])) for r in csv.DictReader(f))
    assert np.allclose(centres, sorted((x + 8 - 64, y + 8 - 32) for x, y in CELLS[1:4:2]),
                       atol=1)


# -------------------------------------------------------------------- resolution --

def cell_image(size=768, cells=40, diameter=16, seed=0):
    """Tissue with dark round cells of ``diameter`` px at least 40 px apart; returns the
    RGB image and the cell centres ``(N, 2)`` in its pixels."""
    rng = np.random.default_rng(seed)
    centres = []
    while len(centres) < cells:
        c = rng.uniform(diameter, size - diameter, 2)
        if all(np.hypot(*(c - other)) >= 40 for other in centres):
            centres.append(c)
    image = np.full((size, size, 3), TISSUE, np.uint8)
    for x, y in centres:  # a disc centred on (x, y) in continuous pixel coordinates
        cv2.circle(image, (round(x * 16 - 8), round(y * 16 - 8)), diameter * 8, NUCLEUS,
                   -1, shift=4)
    return image, np.array(centres)


def matched_within(found, truth, tolerance):
    """Share of ``truth`` points with a ``found`` point within ``tolerance`` (one-to-one,
    nearest first)."""
    if len(found) == 0:
        return 0.0
    distance = np.hypot(*(truth[:, None, :] - found[None, :, :]).transpose(2, 0, 1))
    used, matched = set(), 0
    for i, j in sorted(np.argwhere(distance <= tolerance).tolist(),
                       key=lambda ij: distance[ij[0], ij[1]]):
        if i not in used and ('f', j) not in used:
            used.update({i, ('f', j)})
            matched += 1
    return matched / len(truth)


def test_level_and_resampling_follow_the_training_resolution(tmp_path):
    image = cell_image(size=256, cells=4)[0]
    path = write_slide(tmp_path / 's.tif', image, mpp=0.25, levels=3)  # 0.25, 0.5, 1.0
    with open_slide(path) as slide:
        assert slide.mpp == pytest.approx(0.25)
        assert [slide.level_mpp(k) for k in range(3)] == pytest.approx([0.25, 0.5, 1.0])
        for target, level, resample in [(0.25, 0, 1.0), (0.26, 0, 1.0),  # within 5 %
                                        (0.5, 1, 1.0), (0.6, 1, 0.5 / 0.6),
                                        (0.1, 0, 2.5), (4.0, 2, 0.25),
                                        (0.7071, 1, 0.5 / 0.7071)]:  # nearer 0.5 than 1
            plan = plan_resolution(slide, target)
            assert (plan.level, plan.resample) == (level, pytest.approx(resample)), target
        assert slide.level_for_mpp(0.5 * 2 ** 0.5) == 1  # equally close: the finer level
        plan = plan_resolution(slide, 0.5, level=0)  # a forced level is resampled
        assert (plan.level, plan.resample) == (0, 0.5)
        assert plan.tiling(128, 32) == (256, 64)  # model pixels -> level pixels
        assert plan_resolution(slide, None, level=2) == ResolutionPlan(2, 1.0, 0.25)
        with pytest.raises(ValueError, match='level 3 does not exist'):
            plan_resolution(slide, 0.5, level=3)
    path = write_slide(tmp_path / 'unknown.tif', image, levels=2)
    with open_slide(path) as slide, pytest.warns(ResolutionWarning,
                                                 match='unknown.tif: the slide does not'):
        assert plan_resolution(slide, 0.5) == ResolutionPlan(0)


def test_the_training_images_scale_resamples_slides_without_a_resolution(tmp_path):
    """Models trained on images resampled by ``prepare.py --scale`` (no micrometres per
    pixel known) resample a slide of the same kind by that factor, from the pyramid level
    nearest to it; a known resolution still wins."""
    image = cell_image(size=256, cells=4)[0]
    path = write_slide(tmp_path / 'plain.tif', image, levels=3)  # downsamples 1, 2, 4
    with open_slide(path) as slide:
        assert plan_resolution(slide, None, scale=0.25) == ResolutionPlan(2, 1.0)
        assert plan_resolution(slide, None, scale=0.3) == \
            ResolutionPlan(2, pytest.approx(1.2))
        assert plan_resolution(slide, None, scale=0.6) == \
            ResolutionPlan(1, pytest.approx(1.2))
        assert plan_resolution(slide, None, level=0, scale=0.25) == \
            ResolutionPlan(0, 0.25)
        assert plan_resolution(slide, None, scale=1.02) == ResolutionPlan(0, 1.0)
        with pytest.warns(ResolutionWarning, match=(
                r'plain\.tif: the slide does not state its resolution; resampling it by '
                r'the factor 0\.5 of the training images')):
            assert plan_resolution(slide, 0.5, scale=0.5) == ResolutionPlan(1, 1.0)
        with pytest.raises(ValueError, match="the training images' scale must be > 0"):
            plan_resolution(slide, None, scale=0)
    path = write_slide(tmp_path / 'known.tif', image, mpp=0.25, levels=2)
    with open_slide(path) as slide:
        assert plan_resolution(slide, 0.25, scale=0.1) == \
            ResolutionPlan(0, 1.0, pytest.approx(0.25), 0.25)
    cfg = Config(dict(model=dict(),
                      train_dataloader=dict(dataset=dict(metainfo=dict(scale=0.5)))))
    assert slide_dataset_meta(cfg, dict(classes=('a', ), scale=0.25))['scale'] == 0.25
    assert slide_dataset_meta(cfg, None)['scale'] == 0.5
    assert slide_dataset_meta(Config(dict(model=dict())), None)['scale'] is None


def test_cohort_settings_take_the_models_scale_and_keep_old_fingerprints():
    model = BlobDetector()
    model.cfg = Config(dict(model=dict()))
    model.dataset_meta = dict(model.dataset_meta, scale=0.25)
    settings = model_settings(model, 'x.pth')
    assert (settings.target_mpp, settings.scale) == (None, 0.25)
    assert settings.infer_kwargs()['scale'] == 0.25
    assert settings.as_dict()['scale'] == 0.25
    assert 'scale' not in CohortSettings().as_dict()


def test_cohort_settings_take_test_time_flips_from_the_config_or_the_command_line():
    model = BlobDetector()
    loop = dict(type='TiledTestLoop', tile_size=128, flips=['horizontal'])
    model.cfg = Config(dict(model=dict(), test_cfg=loop))
    assert model_settings(model, 'x.pth').flips == ('horizontal', )
    settings = model_settings(model, 'x.pth', flips=('horizontal', 'vertical', 'diagonal'))
    assert settings.infer_kwargs()['flips'] == ('horizontal', 'vertical', 'diagonal')
    assert json.loads(json.dumps(settings.as_dict()))['flips'] == [
        'horizontal', 'vertical', 'diagonal']
    assert 'flips' not in CohortSettings().as_dict()  # the runs before flips: same records
    assert CohortSettings(flips=['vertical']).flips == ('vertical', )
    with pytest.raises(ValueError, match='CohortSettings: flips must be distinct'):
        CohortSettings(flips=['vertical', 'vertical'])


class HalfTileDetector(BlobDetector):
    """A :class:`BlobDetector` that sees only the left half of every tile it is given,
    so that each mirrored view finds other cells."""

    def forward(self, inputs, data_samples=None, mode='predict'):
        outputs = super().forward(inputs, data_samples, mode)
        for sample in outputs:
            pred = sample.pred_instances
            width = sample.ori_shape[1]
            sample.pred_instances = pred[(pred.bboxes[:, 0] + pred.bboxes[:, 2]) / 2 < width / 2]
        return outputs


def test_test_time_flips_fuse_each_models_mirrored_views(pyramid):
    settings = dict(tile_size=128, overlap=32, tissue=None, progress=False)
    flips = ('horizontal', 'vertical', 'diagonal')
    with open_slide(pyramid) as slide:
        plain = infer_slide(BlobDetector(), slide, score_thr=0.0, **settings)
        flipped = infer_slide(BlobDetector(), slide, score_thr=0.0, flips=flips, **settings)
        half = infer_slide(HalfTileDetector(), slide, score_thr=0.0, flips=flips, **settings)
        half_plain = infer_slide(HalfTileDetector(), slide, score_thr=0.0, **settings)
        half_kept = infer_slide(HalfTileDetector(), slide, score_thr=0.6, flips=flips,
                                **settings)
        with pytest.raises(ValueError, match='infer_slide: flips must be distinct'):
            infer_slide(BlobDetector(), slide, flips=('sideways', ), **settings)
    # a detector that sees the same in every view: its boxes flip back onto the cells
    np.testing.assert_allclose(sorted(flipped.bboxes.tolist()), cell_boxes(), atol=1e-4)
    assert flipped.scores.tolist() == pytest.approx(plain.scores.tolist())
    # one that sees the left half of each tile finds half the cells as they are, every
    # cell in the two views that mirror it into that half, and keeps half the votes
    assert 0 < len(half_plain.bboxes) < len(CELLS)
    assert half_plain.scores.tolist() == [1.0] * len(half_plain.scores)
    np.testing.assert_allclose(sorted(half.bboxes.tolist()), cell_boxes(), atol=1e-4)
    assert half.scores.tolist() == [0.5] * len(CELLS)
    # score_thr applies to the fused scores, not to each view's
    assert len(half_kept.scores) == 0


@pytest.mark.parametrize('slide_mpp, levels, model_mpp, level', [
    (0.25, 2, 0.25, 0),  # full resolution, as trained
    (0.5, 1, 0.25, 0),   # half resolution: tiles upsampled x2
    (0.25, 1, 0.5, 0),   # model at half resolution, no pyramid: tiles downsampled x2
    (0.25, 2, 0.5, 1),   # model at half resolution: pyramid level 1 as it is
])
def test_cells_land_at_the_same_level0_positions_whatever_the_scan_resolution(
        tmp_path, slide_mpp, levels, model_mpp, level):
    """A slide scanned at another resolution than the training images' gives its cells at
    the same places: the image is written at 0.25 um/px and at half that resolution (0.5,
    area-averaged); a blob detector "trained" at ``model_mpp`` finds only cells of the
    size they have there (16 px at 0.25, 8 px at 0.5). Detected centres, converted from
    the slide's level-0 pixels to full-resolution pixels, must match >= 95 % of the true
    centres within 2 full-resolution pixels. It proves the level choice, the resampling
    and the mapping of boxes back to level-0 pixels end to end (not a trained model)."""
    image, truth = cell_image()
    if slide_mpp != 0.25:
        factor = 0.25 / slide_mpp
        image = cv2.resize(image, None, fx=factor, fy=factor, interpolation=cv2.INTER_AREA)
    path = write_slide(tmp_path / 'slide.tif', image, mpp=slide_mpp, levels=levels)
    size = 16 * 0.25 / model_mpp
    model = BlobDetector(cell_size=size, sizes=(0.7 * size, 1.4 * size), mpp=model_mpp)
    with open_slide(path) as slide:
        reader = RecordingReader(slide)
        result = infer_slide(model, reader, tile_size=128, overlap=32, tissue=None,
                             score_thr=0.0, progress=False)
    assert (result.level, result.mpp, result.target_mpp) == (level, slide_mpp, model_mpp)
    assert {read[0] for read in reader.reads} == {level}
    found = result.centres * slide_mpp / 0.25
    assert len(found) == len(truth)
    assert matched_within(found, truth, tolerance=2) >= 0.95
    # the model saw its own resolution: level mpp / resample
    assert slide_mpp * 2 ** level / result.resample == pytest.approx(model_mpp)
    # read as it is, the cells have the wrong size for this detector: none is found
    if slide_mpp * 2 ** level != model_mpp:
        with open_slide(path) as slide:
            plain = infer_slide(model, slide, level=level, target_mpp=None, tile_size=128,
                                overlap=32, tissue=None, score_thr=0.0, progress=False)
        assert len(plain.scores) == 0


def test_the_training_resolution_comes_from_the_checkpoint_else_the_config():
    cfg = Config(dict(train_dataloader=dict(dataset=dict(metainfo=dict(mpp=0.5))),
                      metainfo=dict(mpp=0.3)))
    assert training_mpp(cfg, dict(classes=('a', ), mpp=0.25)) == 0.25
    assert training_mpp(cfg, dict(classes=('a', ))) == 0.5
    assert training_mpp(Config(dict(metainfo=dict(mpp=0.3))), None) == 0.3
    assert training_mpp(Config(dict()), dict(classes=('a', ))) is None
    with pytest.raises(ValueError, match='must be > 0'):
        training_mpp(Config(dict(metainfo=dict(mpp=0))), None)


@pytest.mark.parametrize('config, key', [
    ('configs/real/mnfinder_keep1_pu.py', 'model.roi_head.bbox_head.num_classes'),
    ('configs/real/mnfinder_cascade-rcnn_keep1_pu.py',
     r'model.roi_head.bbox_head\[0\].num_classes'),
    ('configs/real/mnfinder_retinanet_keep1_pu.py', 'model.bbox_head.num_classes')])
def test_slide_classes_are_checked_for_every_detector_kind(config, key):
    cfg = Config.fromfile(str(REPO / config))
    meta = slide_dataset_meta(cfg, None)
    assert meta['classes'] == ('nucleus', ) and len(meta['palette']) == 1
    cfg.test_dataloader.dataset.metainfo = dict(classes=('a', 'b'))
    with pytest.raises(ValueError, match=f'names 2 classes .* but {key} is 1'):
        slide_dataset_meta(cfg, None)
