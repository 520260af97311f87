"""Tiled whole-image inference: tiling, shifting and NMS merging, and the loop end to end."""
import json
import math

import cv2
import numpy as np
import pytest
import torch
from mmengine.evaluator import Evaluator
from mmengine.model import BaseModel
from mmengine.runner import Runner
from mmengine.structures import InstanceData

from mmdet.models.data_preprocessors import DetDataPreprocessor
from mmdet.registry import LOOPS, MODELS
from mmdet.structures import DetDataSample
from mmdet_pu.engine.runner import TiledTestLoop, TiledValLoop, merge_tile_predictions
from mmdet_pu.engine.runner.test_flips import TTA_FLIPS, flip_back, flip_tile
from mmdet_pu.engine.runner.tile_merge import in_core, tile_cores
from mmdet_pu.engine.runner.tiled_loop import TiledInferenceMixin
from mmdet_pu.evaluation import CellDetMetric
from cellio.tiling import window_grid
from mmdet_pu.models.detectors import FusedEnsemble


def instances(boxes, scores, labels):
    return InstanceData(bboxes=torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4),
                        scores=torch.tensor(scores, dtype=torch.float32),
                        labels=torch.tensor(labels, dtype=torch.int64))


def test_cell_on_a_tile_border_predicted_twice_is_one_true_positive():
    # Tiles at x0 = 0 and x0 = 96 (128 px, overlap 32); a 16 px cell at x 100..116 is
    # seen by both: at tile x 100..116 in the first and 4..20 in the second.
    left = instances([[100, 40, 116, 56]], [0.9], [0])
    right = instances([[4, 41, 20, 57], [50, 50, 60, 60]], [0.8, 0.7], [0, 0])
    merged = merge_tile_predictions([left, right], [(0, 0), (96, 0)], nms_iou=0.3)
    assert merged.bboxes.tolist() == [[100, 40, 116, 56], [146, 50, 156, 60]]
    assert merged.scores.tolist() == pytest.approx([0.9, 0.7])

    sample = DetDataSample(metainfo=dict(img_id=0, img_path='x.png'))
    sample.pred_instances = merged
    sample.gt_instances = instances([[100, 40, 116, 56], [146, 50, 156, 60]], [1, 1],
                                    [0, 0])
    evaluator = Evaluator(CellDetMetric(dump_per_image=False))
    evaluator.dataset_meta = dict(classes=('cell',))
    evaluator.process([sample])
    metrics = evaluator.evaluate(1)
    assert (metrics['cell/cell/tp'], metrics['cell/cell/fp']) == (2, 0)


@pytest.mark.parametrize('drop', [None, 4, 0])
def test_tile_cores_split_every_overlap_in_its_middle(drop):
    # 160 px, 64 px tiles with overlap 16: origins 0, 48, 96; overlaps [48, 64) and
    # [96, 112), split at 56 and 104. ``drop`` removes a window (a tile without tissue):
    # its neighbours' cores then reach over its area.
    windows = window_grid(160, 160, 64, 16)
    if drop is not None:
        windows.pop(drop)
    cores = tile_cores(windows)
    centre = windows.index((48, 48, 64, 64)) if drop != 4 else None
    if centre is not None:
        assert cores[centre] == (56, 56, 104, 104)
    # every pixel centre of a window lies in a core of the windows given, in exactly
    # one for the whole grid; next to a missing window the cores of its neighbours reach
    # over its area (whole cells there may be seen by no tile) and may overlap
    points = torch.tensor([[x + 0.5, y + 0.5] for y in range(160) for x in range(160)
                           if any(x0 <= x < x0 + w and y0 <= y < y0 + h
                                  for x0, y0, w, h in windows)])
    boxes = torch.cat([points, points], 1)
    owners = torch.stack([in_core(boxes, core) for core in cores]).sum(0)
    assert owners.eq(1).all() if drop is None else owners.ge(1).all()
    # without overlap the cores do not cut: every detection of a tile is kept
    assert set(tile_cores(window_grid(128, 128, 64, 0))) == {(-math.inf,) * 2 + (math.inf,) * 2}


def test_core_drops_the_cut_part_of_a_cell_that_nms_would_keep():
    # Tiles at x0 = 0 and 96 (128 px, overlap 32, split at 112). A 16 px cell at
    # x 124..140 is cut by the first tile's edge: it sees a 4 px sliver (IoU 0.25 with
    # the whole cell, under the NMS threshold), the second tile sees it whole.
    sliver = instances([[124, 40, 128, 56]], [0.9], [0])
    whole = instances([[28, 40, 44, 56]], [0.8], [0])
    offsets = [(0, 0), (96, 0)]
    plain = merge_tile_predictions([sliver, whole], offsets, nms_iou=0.3)
    assert len(plain) == 2  # the sliver survives as a false positive
    cores = tile_cores([(0, 0, 128, 128), (96, 0, 128, 128)])
    merged = merge_tile_predictions([sliver, whole], offsets, nms_iou=0.3, cores=cores)
    assert merged.bboxes.tolist() == [[124, 40, 140, 56]]
    with pytest.raises(ValueError, match='1 tile cores but 2 offsets'):
        merge_tile_predictions([sliver, whole], offsets, cores=cores[:1])


def test_merge_is_class_wise_and_caps():
    a = instances([[0, 0, 10, 10]], [0.9], [0])
    b = instances([[0, 0, 10, 10]], [0.8], [1])  # same place, other class: kept
    merged = merge_tile_predictions([a, b], [(0, 0), (0, 0)])
    assert merged.labels.tolist() == [0, 1]
    assert len(merge_tile_predictions([a, b], [(0, 0), (0, 0)], max_per_img=1)) == 1
    empty = merge_tile_predictions([instances([], [], [])], [(5, 5)])
    assert len(empty) == 0 and empty.bboxes.shape == (0, 4)


def test_class_agnostic_merge_keeps_one_class_per_place():
    a = instances([[0, 0, 10, 10], [40, 40, 50, 50]], [0.9, 0.6], [0, 1])
    b = instances([[1, 0, 11, 10]], [0.8], [1])  # IoU 0.82 with a's first, other class
    merged = merge_tile_predictions([a, b], [(0, 0), (0, 0)], class_agnostic=True)
    assert merged.labels.tolist() == [0, 1]
    assert merged.scores.tolist() == pytest.approx([0.9, 0.6])


class DarkBlobDetector(BaseModel):
    """Stand-in detector: every dark connected blob of a tile is a cell; the score is
    the blob's area relative to a whole 16 px cell, so cut cells score lower."""

    def __init__(self):
        super().__init__(data_preprocessor=DetDataPreprocessor())
        self.tile_shapes = []

    def forward(self, inputs, data_samples=None, mode='predict'):
        for image, sample in zip(inputs, data_samples):
            height, width = sample.img_shape
            self.tile_shapes.append((height, width))
            gray = image[:, :height, :width].float().mean(0).numpy()
            count, _, blobs, _ = cv2.connectedComponentsWithStats(
                (gray < 100).astype(np.uint8))
            x, y, w, h, area = blobs[1:].T.astype(np.float32)
            # like mmdet heads with rescale=True: boxes in original image pixels
            scale_w, scale_h = sample.metainfo.get('scale_factor', (1.0, 1.0))
            bboxes = np.stack([x, y, x + w, y + h], 1) / [scale_w, scale_h, scale_w, scale_h]
            sample.pred_instances = InstanceData(
                bboxes=torch.from_numpy(bboxes.astype(np.float32)),
                scores=torch.from_numpy(np.minimum(area / (256 * scale_w * scale_h), 1)),
                labels=torch.zeros(count - 1, dtype=torch.int64))
        return data_samples


MODELS.register_module(name='DarkBlobDetector', module=DarkBlobDetector, force=True)

CELLS = [(20, 20), (56, 30), (66, 90), (110, 110), (140, 60)]  # top-left corners


def write_dataset(root):
    """One 160 x 160 image with 16 px square cells, three of them on tile borders
    (tiles of 64 px with overlap 16 start at 0, 48, 96)."""
    (root / 'images').mkdir(parents=True)
    image = np.full((160, 160, 3), 220, np.uint8)
    annotations = []
    for i, (x, y) in enumerate(CELLS):
        image[y:y + 16, x:x + 16] = 40
        annotations.append(dict(id=i + 1, image_id=1, category_id=1, bbox=[x, y, 16, 16],
                                area=256, iscrowd=0))
    cv2.imwrite(str(root / 'images' / 'whole.png'), image)
    coco = dict(images=[dict(id=1, file_name='whole.png', width=160, height=160)],
                annotations=annotations, categories=[dict(id=1, name='cell')])
    (root / 'whole.json').write_text(json.dumps(coco))


def build_runner(root, loop_cfg, hooks=(), stage='test', resize=None, model=None):
    """A Runner of ``model`` (default a ``DarkBlobDetector``) whose ``stage`` loop is
    ``loop_cfg``; ``resize`` scales the input images (annotations are loaded after the
    resize, so they stay in original pixels)."""
    resize = [dict(type='Resize', scale_factor=resize, keep_ratio=True)] if resize else []
    dataset = dict(
        type='CocoDataset', data_root=str(root), ann_file='whole.json',
        data_prefix=dict(img='images/'), metainfo=dict(classes=('cell',)),
        test_mode=True, pipeline=[
            dict(type='LoadImageFromFile'), *resize,
            dict(type='LoadAnnotations', with_bbox=True),
            dict(type='PackDetInputs',
                 meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape',
                            'scale_factor'))])
    loader = dict(batch_size=1, num_workers=0, dataset=dataset,
                  sampler=dict(type='DefaultSampler', shuffle=False))
    # a unique experiment name: mmengine reuses the logger (and so the log dir where
    # CellDetMetric dumps) of an earlier Runner with the same name, i.e. the same second
    return Runner(
        model=model or DarkBlobDetector(), work_dir=str(root / 'work'), experiment_name=root.name,
        **{f'{stage}_dataloader': loader, f'{stage}_cfg': loop_cfg,
           f'{stage}_evaluator': dict(type='CellDetMetric')},
        custom_hooks=list(hooks), default_scope='mmdet')


def test_tiled_test_loop_end_to_end(tmp_path):
    write_dataset(tmp_path)
    runner = build_runner(tmp_path, dict(type='TiledTestLoop', tile_size=64, overlap=16,
                                         nms_iou=0.3, tile_batch_size=4),
                          hooks=[dict(type='CellOverlayHook', out_dir='overlays')])
    assert isinstance(runner.test_loop, TiledTestLoop)
    metrics = runner.test()
    # 9 tiles of 64 x 64 went through the model; every cell found once, no duplicate
    assert runner.model.tile_shapes == [(64, 64)] * 9
    assert (metrics['cell/cell/tp'], metrics['cell/cell/fp'],
            metrics['cell/cell/fn']) == (len(CELLS), 0, 0)

    # whole-image predictions reached the evaluator's dump and the overlay hook
    report = json.loads((tmp_path / 'work' / 'cell_metrics' /
                         'test_per_image.json').read_text())
    assert report['images'][0]['tp'] == [len(CELLS)]
    overlays = list((tmp_path / 'work').glob('*/overlays/whole.png'))
    assert len(overlays) == 1
    assert cv2.imread(str(overlays[0])).shape[:2][1] == 160


def test_without_overlap_a_cell_cut_in_halves_is_counted_twice(tmp_path):
    # Tiles at x0 = 0, 64, 96: the cell at x 56..72 is cut in two 8 px halves (IoU 0
    # with each other, so NMS keeps both): one half matches (IoU 0.5), one is an FP.
    write_dataset(tmp_path)
    metrics = build_runner(tmp_path, dict(type='TiledTestLoop', tile_size=64,
                                          overlap=0)).test()
    assert (metrics['cell/cell/tp'], metrics['cell/cell/fp']) == (len(CELLS), 1)


def test_tiles_of_a_resized_input_are_shifted_in_original_pixels(tmp_path):
    # the 160 px image is packed at 320 px; 128 px tiles with 32 px overlap
    write_dataset(tmp_path)
    runner = build_runner(tmp_path, dict(type='TiledTestLoop', tile_size=128, overlap=32),
                          resize=2.0)
    metrics = runner.test()
    assert runner.model.tile_shapes == [(128, 128)] * 9
    assert (metrics['cell/cell/tp'], metrics['cell/cell/fp']) == (len(CELLS), 0)


def test_tiled_val_loop(tmp_path):
    write_dataset(tmp_path)
    runner = build_runner(tmp_path, dict(type='TiledValLoop', tile_size=64, overlap=16),
                          stage='val')
    assert isinstance(runner.val_loop, TiledValLoop)
    assert runner.val()['cell/cell/tp'] == len(CELLS)
    assert (tmp_path / 'work' / 'cell_metrics' / 'val_per_image.json').exists()


def test_loop_arguments_are_checked(tmp_path):
    write_dataset(tmp_path)
    with pytest.raises(ValueError, match='overlap must be in'):
        build_runner(tmp_path, dict(type='TiledTestLoop', tile_size=64,
                                    overlap=64)).test_loop
    with pytest.raises(ValueError, match='tile_size must be a positive int'):
        build_runner(tmp_path, dict(type='TiledTestLoop', tile_size=0)).test_loop
    assert LOOPS.get('TiledValLoop') is TiledValLoop


class FixedDetector:
    """Stand-in ``test_step`` returning the same detections for every tile."""

    def __init__(self, pred):
        self.pred = pred

    def __call__(self, data):
        return [DetDataSample(pred_instances=self.pred.clone()) for _ in data['inputs']]


def one_tile_batch(size=64):
    sample = DetDataSample(metainfo=dict(img_shape=(size, size), ori_shape=(size, size)))
    return dict(inputs=[torch.zeros(3, size, size, dtype=torch.uint8)],
                data_samples=[sample])


class Tiler(TiledInferenceMixin):
    """The loops' tiling without a runner."""

    def __init__(self, **tiling):
        self._init_tiling(**tiling)


def test_an_ensemble_is_merged_member_by_member_and_fused_on_the_whole_image():
    ensemble = FusedEnsemble(detector=dict(type='DarkBlobDetector'), num_members=2)
    # two members see one cell with boxes at IoU 0.4: too apart for one cluster (0.55)
    # and close enough for the tile merge's NMS (0.3), which must not run after fusion
    first = FixedDetector(instances([[0, 0, 10, 10]], [0.9], [0]))
    second = FixedDetector(instances([[0, 3, 10, 13]], [0.8], [0]))
    pred = Tiler(tile_size=64, nms_iou=0.3).predict_tiled(
        [first, second], one_tile_batch(), fuse=ensemble.fuse)[0].pred_instances
    assert pred.scores.tolist() == pytest.approx([0.45, 0.4])
    pred = Tiler(tile_size=64, nms_iou=0.3, max_per_img=1).predict_tiled(
        [first, second], one_tile_batch(), fuse=ensemble.fuse)[0].pred_instances
    assert pred.scores.tolist() == pytest.approx([0.45])
    with pytest.raises(ValueError, match='expected the detections of 2 members, got 1'):
        ensemble.fuse([first.pred])


def test_the_tiled_loop_runs_every_member_of_a_fused_ensemble(tmp_path):
    write_dataset(tmp_path)
    model = MODELS.build(dict(type='FusedEnsemble', detector=dict(type='DarkBlobDetector'),
                              num_members=2))
    runner = build_runner(tmp_path, dict(type='TiledTestLoop', tile_size=64, overlap=16),
                          model=model)
    metrics = runner.test()
    assert [member.tile_shapes for member in model.members] == [[(64, 64)] * 9] * 2
    assert (metrics['cell/cell/tp'], metrics['cell/cell/fp'],
            metrics['cell/cell/fn']) == (len(CELLS), 0, 0)


def test_test_time_flips_find_each_cell_in_every_view_and_fuse_them(tmp_path):
    # the cells lie asymmetrically: a view whose boxes were not flipped back would
    # miss them, and its detections would stand apart at a quarter of their score
    write_dataset(tmp_path)
    write_dataset(tmp_path / 'plain')
    build_runner(tmp_path / 'plain', dict(type='TiledTestLoop', tile_size=64,
                                          overlap=16)).test()
    flipped = build_runner(tmp_path, dict(type='TiledTestLoop', tile_size=64, overlap=16,
                                          flips=list(TTA_FLIPS)))
    metrics = flipped.test()
    assert flipped.model.tile_shapes == [(64, 64)] * 36  # 9 tiles in four views
    assert (metrics['cell/cell/tp'], metrics['cell/cell/fp'],
            metrics['cell/cell/fn']) == (len(CELLS), 0, 0)

    def scores(root):
        report = json.loads((root / 'work' / 'cell_metrics' /
                             'test_per_image.json').read_text())
        return sorted(report['images'][0]['detections']['scores'])

    assert scores(tmp_path) == pytest.approx(scores(tmp_path / 'plain'))


def test_flip_back_undoes_the_flip_of_a_tile():
    tile = torch.zeros(1, 40, 64)
    tile[0, 5:15, 2:12] = 1  # a cell at x 2..12, y 5..15 of a 64 x 40 tile
    for direction in TTA_FLIPS:
        ys, xs = torch.nonzero(flip_tile(tile, direction)[0], as_tuple=True)
        seen = instances([[xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]], [0.9], [0])
        back = flip_back(seen, direction, height=40, width=64)
        assert back.bboxes.tolist() == [[2, 5, 12, 15]], direction
    with pytest.raises(ValueError, match='flips must be distinct directions'):
        Tiler(tile_size=64, flips=['horizontal', 'sideways'])
    with pytest.raises(ValueError, match='flips must be distinct directions'):
        Tiler(tile_size=64, flips=['vertical', 'vertical'])
