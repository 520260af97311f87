"""TP / FP / FN overlays: drawing, from a prediction dump, tools/visualize.py and
tools/test.py --show-dir."""
import json
import os
import subprocess
import sys

import cv2
import mmengine
import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope

from mmdet.registry import MODELS
from mmdet_pu.evaluation import CellOverlayHook
from mmdet_pu.evaluation.overlay import (COLOURS, draw_overlay, overlays_from_dump,
                                         save_cell_overlays)
from tests._data import REPO, make_tiny_coco, write_tiny_config


def band_height(picture, image):
    return picture.shape[0] - image.shape[0]


def test_draw_overlay_colours():
    image = np.full((100, 100, 3), 128, np.uint8)
    picture = draw_overlay(image, tp_bboxes=[[10, 10, 30, 30]],
                           fp_bboxes=[[50, 10, 70, 30]], fn_bboxes=[[10, 50, 30, 70]],
                           title='cell')
    band = band_height(picture, image)
    assert picture.shape[1:] == (100, 3) and band > 0
    assert tuple(picture[band + 10, 20]) == COLOURS['tp']   # top edge of the TP box
    assert tuple(picture[band + 10, 60]) == COLOURS['fp']
    assert tuple(picture[band + 50, 20]) == COLOURS['fn']
    assert tuple(picture[band + 20, 20]) == (128, 128, 128)  # inside: untouched
    b, g, r = np.moveaxis(picture[:band].astype(int), -1, 0)
    assert ((b < 100) & (g > 150) & (r > 150)).any()  # 'FN 1' written in yellow
    dots = draw_overlay(image, [[10, 10, 30, 30]], [], [], style='dot')
    assert tuple(dots[band_height(dots, image) + 20, 20]) == COLOURS['tp']
    with pytest.raises(ValueError, match='style'):
        draw_overlay(image, [], [], [], style='cross')


def write_case(root):
    """A 100 px image, two classes, and a prediction dump: class a has a TP and an FP,
    class b an FN; one low-score detection is not drawn."""
    root.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(root / 'img.png'), np.full((100, 100, 3), 128, np.uint8))
    coco = dict(images=[dict(id=7, file_name='img.png', width=100, height=100)],
                categories=[dict(id=1, name='a'), dict(id=2, name='b')],
                annotations=[dict(id=1, image_id=7, category_id=1, bbox=[10, 10, 20, 20]),
                             dict(id=2, image_id=7, category_id=2, bbox=[10, 50, 20, 20])])
    (root / 'ann.json').write_text(json.dumps(coco))
    mmengine.dump([dict(img_id=7, img_path=str(root / 'img.png'), pred_instances=dict(
        bboxes=torch.tensor([[11., 10, 31, 30], [50, 10, 70, 30], [50, 50, 70, 70]]),
        scores=torch.tensor([0.9, 0.8, 0.3]), labels=torch.tensor([0, 0, 1])))],
        str(root / 'preds.pkl'))


def test_overlays_from_prediction_dump(tmp_path):
    write_case(tmp_path)
    out = tmp_path / 'out'
    written = overlays_from_dump(str(tmp_path / 'preds.pkl'), str(tmp_path / 'ann.json'),
                                 str(out))
    assert sorted(os.path.basename(p) for p in written) == ['img_a.png', 'img_b.png']
    a = cv2.imread(str(out / 'img_a.png'))
    b = cv2.imread(str(out / 'img_b.png'))
    band = a.shape[0] - 100
    assert tuple(a[band + 10, 20]) == COLOURS['tp']
    assert tuple(a[band + 10, 60]) == COLOURS['fp']
    assert tuple(a[band + 50, 20]) == (128, 128, 128)  # class b's cell is not on a's picture
    assert tuple(b[band + 50, 20]) == COLOURS['fn']
    assert tuple(b[band + 50, 60]) == (128, 128, 128)  # score 0.3 < 0.5: not drawn

    coco = json.loads((tmp_path / 'ann.json').read_text())
    coco['images'][0]['id'] = 8
    (tmp_path / 'bad.json').write_text(json.dumps(coco))
    with pytest.raises(ValueError, match=r'annotations\[0\] refers to image 7'):
        overlays_from_dump(str(tmp_path / 'preds.pkl'), str(tmp_path / 'bad.json'), str(out))
    for ann in coco['annotations']:
        ann['image_id'] = 8
    (tmp_path / 'other.json').write_text(json.dumps(coco))
    with pytest.raises(ValueError, match='img_id 7, which is not an image of'):
        overlays_from_dump(str(tmp_path / 'preds.pkl'), str(tmp_path / 'other.json'),
                           str(out))


def test_an_overlay_is_written_completely_or_not_at_all(tmp_path, monkeypatch):
    """The PNG reads back as drawn (BGR); a write that fails before its final rename
    leaves the previous overlay as it was and no partial file."""
    picture = np.zeros((20, 30, 3), np.uint8)
    picture[..., 2] = 255  # red in BGR
    paths = save_cell_overlays(str(tmp_path), 'x/img.png', {'cell': picture})
    assert paths == [str(tmp_path / 'img.png')]
    np.testing.assert_array_equal(cv2.imread(paths[0]), picture)

    def interrupted(src, dst):
        raise OSError('interrupted')

    monkeypatch.setattr(os, 'replace', interrupted)
    with pytest.raises(OSError, match='interrupted'):
        save_cell_overlays(str(tmp_path), 'x/img.png', {'cell': np.zeros_like(picture)})
    monkeypatch.undo()
    np.testing.assert_array_equal(cv2.imread(paths[0]), picture)
    assert os.listdir(tmp_path) == ['img.png']


def test_overlay_interval_must_be_a_positive_integer():
    """interval=0 would divide by zero at the first test batch."""
    for interval in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=r'CellOverlayHook: interval must be an '
                                             rf'integer >= 1 .*got {interval!r}'):
            CellOverlayHook(interval=interval)
    assert CellOverlayHook(interval=3).interval == 3


@pytest.fixture(scope='module')
def random_checkpoint(module_tmp_path):
    """A tiny config evaluated by TiledTestLoop + CellDetMetric and an untrained
    checkpoint of its model."""
    root = module_tmp_path
    make_tiny_coco(root / 'data', n_images=2, size=128)
    config = write_tiny_config(root / 'tiny.py', root / 'data', extra="""
test_cfg = dict(type='TiledTestLoop', tile_size=96, overlap=32, nms_iou=0.3)
test_evaluator = dict(type='CellDetMetric', iou_thr=0.5)
""")
    init_default_scope('mmdet')
    model = MODELS.build(Config.fromfile(config).model)
    checkpoint = root / 'random.pth'
    torch.save(dict(state_dict=model.state_dict(), meta=dict()), checkpoint)
    return root, config, checkpoint


def test_tools_test_show_dir_writes_overlays(random_checkpoint):
    root, config, checkpoint = random_checkpoint
    work_dir = root / 'work'
    proc = subprocess.run(
        [sys.executable, 'tools/test.py', config, str(checkpoint), '--work-dir',
         str(work_dir), '--show-dir', 'overlays'], cwd=REPO, capture_output=True,
        text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    overlays = sorted(work_dir.glob('*/overlays/*.png'))
    assert [p.name for p in overlays] == ['train_000.png', 'train_001.png']
    assert cv2.imread(str(overlays[0])).shape[1] == 128
    assert (work_dir / 'cell_metrics' / 'test_per_image.json').exists()
    assert 'CellDetMetric on 2 images' in proc.stdout + proc.stderr


def test_visualize_from_config_and_checkpoint(random_checkpoint, tmp_path):
    _, config, checkpoint = random_checkpoint
    proc = subprocess.run(
        [sys.executable, 'tools/visualize.py', config, str(checkpoint), '--out-dir',
         str(tmp_path / 'o'), '--work-dir', str(tmp_path / 'w'), '--style', 'dot'],
        cwd=REPO, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(os.listdir(tmp_path / 'o')) == ['train_000.png', 'train_001.png']
    assert f'2 overlays in {tmp_path / "o"}' in proc.stdout
