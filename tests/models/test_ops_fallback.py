"""The torch stand-ins for mmcv's compiled ops (``mmdet_pu.ops_fallback``), against the
compiled library (where mmcv has it): the same results, alone and in a Faster R-CNN."""
import importlib
import json
import os
import subprocess
import sys

import pytest
import torch

from mmdet.models.losses.focal_loss import py_sigmoid_focal_loss
from mmdet_pu import ops_fallback
from tests._data import REPO, make_tiny_coco, write_tiny_config


@pytest.fixture
def compiled():
    """mmcv's compiled library (skips where this environment runs on the stand-ins)."""
    if ops_fallback.in_use() or not ops_fallback.compiled_ops_present():
        pytest.skip('mmcv has no compiled ops here to compare the stand-ins with')
    return importlib.import_module(ops_fallback.EXT_MODULE)


def random_boxes(n, extent=200.0, largest=30.0, generator=None):
    xy = torch.rand(n, 2, generator=generator) * extent
    wh = torch.rand(n, 2, generator=generator) * largest + 1
    return torch.cat([xy, xy + wh], 1)


@pytest.mark.parametrize('n', [0, 1, 40, 700])
@pytest.mark.parametrize('offset', [0, 1])
def test_nms_keeps_what_mmcv_keeps(compiled, n, offset):
    gen = torch.Generator().manual_seed(n)
    boxes, scores = random_boxes(n, generator=gen), torch.rand(n, generator=gen)
    expected = compiled.nms(boxes, scores, iou_threshold=0.5, offset=offset)
    assert torch.equal(ops_fallback.nms(boxes, scores, 0.5, offset), expected)


def test_nms_across_blocks_keeps_what_mmcv_keeps(compiled, monkeypatch):
    monkeypatch.setattr(ops_fallback, 'NMS_BLOCK', 64)  # 700 boxes: 11 blocks
    gen = torch.Generator().manual_seed(7)
    boxes, scores = random_boxes(700, extent=120.0, generator=gen), torch.rand(700, generator=gen)
    expected = compiled.nms(boxes, scores, iou_threshold=0.3, offset=0)
    kept = ops_fallback.nms(boxes, scores, 0.3, 0)
    assert torch.equal(kept, expected) and 0 < len(kept) < 700


def roi_inputs(n=150, seed=0):
    gen = torch.Generator().manual_seed(seed)
    features = torch.randn(3, 4, 29, 37, generator=gen)
    xy = torch.rand(n, 2, generator=gen) * torch.tensor([37 * 4.0, 29 * 4.0]) - 20
    wh = torch.rand(n, 2, generator=gen) * 100  # some far beyond the map, some empty
    wh[:5] = 0
    rois = torch.cat([torch.randint(0, 3, (n, 1), generator=gen).float(), xy, xy + wh], 1)
    return features, rois


@pytest.mark.parametrize('aligned', [True, False])
@pytest.mark.parametrize('sampling_ratio', [0, 2])
def test_roi_align_forward_and_backward_match_mmcv(compiled, monkeypatch, aligned,
                                                   sampling_ratio):
    monkeypatch.setattr(ops_fallback, 'ROI_CHUNK', 16)  # several chunks per image
    features, rois = roi_inputs()
    options = dict(aligned_height=7, aligned_width=7, spatial_scale=0.25,
                   sampling_ratio=sampling_ratio, pool_mode=1, aligned=aligned)
    empty = features.new_zeros(0)
    expected, pooled = (features.new_zeros(len(rois), 4, 7, 7) for _ in range(2))
    compiled.roi_align_forward(features, rois, expected, empty, empty, **options)
    ops_fallback.roi_align_forward(features, rois, pooled, empty, empty, **options)
    assert expected.abs().max() > 0.1
    torch.testing.assert_close(pooled, expected, atol=1e-5, rtol=1e-5)

    grad = torch.randn_like(expected)
    expected_grad, got_grad = torch.zeros_like(features), torch.zeros_like(features)
    compiled.roi_align_backward(grad, rois, empty, empty, expected_grad, **options)
    ops_fallback.roi_align_backward(grad, rois, empty, empty, got_grad, **options)
    torch.testing.assert_close(got_grad, expected_grad, atol=1e-5, rtol=1e-5)


def test_roi_align_max_pooling_is_refused_by_name():
    features, rois = roi_inputs(4)
    with pytest.raises(RuntimeError, match='pool_mode="max"'):
        ops_fallback.roi_align_forward(
            features, rois, features.new_zeros(4, 4, 7, 7), features, features,
            aligned_height=7, aligned_width=7, spatial_scale=0.25, sampling_ratio=0,
            pool_mode=0, aligned=True)


@pytest.mark.parametrize('weighted', [False, True])
def test_sigmoid_focal_loss_matches_mmdet_and_its_gradient(weighted):
    gen = torch.Generator().manual_seed(3)
    logits = torch.randn(12, 3, generator=gen, dtype=torch.float64) * 3
    target = torch.tensor([0, 1, 2, 3, 3, 1, 0, 2, 3, 1, 1, 0])  # 3: background
    weight = torch.tensor([0.5, 2.0, 1.5], dtype=torch.float64) if weighted else \
        logits.new_zeros(0)
    output, grad = torch.zeros_like(logits), torch.zeros_like(logits)
    ops_fallback.sigmoid_focal_loss_forward(logits, target, weight, output,
                                            gamma=2.0, alpha=0.25)
    ops_fallback.sigmoid_focal_loss_backward(logits, target, weight, grad,
                                             gamma=2.0, alpha=0.25)
    leaf = logits.clone().requires_grad_(True)
    one_hot = torch.nn.functional.one_hot(target, 4)[:, :3].to(leaf.dtype)
    expected = py_sigmoid_focal_loss(leaf, one_hot, gamma=2.0, alpha=0.25,
                                     reduction='none')
    if weighted:  # mmcv's kernel scales row n by its target's weight
        expected = expected * weight[target.clamp(max=2)][:, None]
    torch.testing.assert_close(output, expected.detach())
    expected.sum().backward()
    torch.testing.assert_close(grad, leaf.grad)


def test_other_ops_raise_naming_the_op_and_the_remedy():
    stand_in = ops_fallback.TorchExt()
    assert stand_in.nms is ops_fallback.nms
    assert hasattr(stand_in, 'deform_conv_forward')  # what mmcv checks at import
    with pytest.raises(RuntimeError, match="'deform_conv_forward'.*build mmcv"):
        stand_in.deform_conv_forward()


def test_install_keeps_the_compiled_ops_unless_asked(compiled):
    assert ops_fallback.compiled_ops_present()
    assert ops_fallback.install(force=False) is False
    assert not ops_fallback.in_use()
    with pytest.raises(RuntimeError, match='imported already'):
        ops_fallback.install(force=True)


def run_python(code, *args, torch_ops):
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS='1',
               **{ops_fallback.FORCE_ENV: '1' if torch_ops else '0'})
    proc = subprocess.run([sys.executable, '-c', code, *map(str, args)], cwd=REPO,
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


#: Two SGD steps and a prediction of the slim Faster R-CNN on fixed batches.
TRAIN_AND_PREDICT = """
import json, sys
import numpy as np, torch
import mmdet_pu
from mmdet_pu.ops_fallback import in_use
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmengine.runner import Runner
from mmdet.registry import MODELS
cfg = Config.fromfile(sys.argv[1])
init_default_scope('mmdet')
torch.manual_seed(0); np.random.seed(0)
model = MODELS.build(cfg.model)
model.init_weights()
batches = [b for _, b in zip(range(2), Runner.build_dataloader(cfg.val_dataloader, seed=0))]
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
losses = []
for batch in batches:
    model.train()
    data = model.data_preprocessor(batch, True)
    loss, _ = model.parse_losses(model(**data, mode='loss'))
    optimizer.zero_grad(); loss.backward(); optimizer.step()
    losses.append(loss.item())
model.eval()
with torch.no_grad():
    found = model.test_step(batches[0])[0].pred_instances
print(json.dumps(dict(torch_ops=in_use(), losses=losses, detections=len(found),
                      top=found.scores[:20].tolist())))
"""


def test_faster_rcnn_trains_and_predicts_alike_on_the_stand_ins(compiled, tmp_path):
    data_root = tmp_path / 'data'
    make_tiny_coco(data_root, n_images=2, size=128)
    config = write_tiny_config(tmp_path / 'tiny.py', data_root, batch_size=2)
    runs = [json.loads(run_python(TRAIN_AND_PREDICT, config, torch_ops=flag).splitlines()[-1])
            for flag in (False, True)]
    assert [run['torch_ops'] for run in runs] == [False, True]
    compiled_run, stand_in = runs
    assert stand_in['detections'] == compiled_run['detections'] > 0
    torch.testing.assert_close(stand_in['losses'], compiled_run['losses'],
                               atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(stand_in['top'], compiled_run['top'], atol=1e-4, rtol=1e-4)


def test_check_env_names_the_ops_it_runs(compiled):
    code = ('import runpy, sys; sys.argv = ["check_env"]; '
            'runpy.run_path("tools/check_env.py", run_name="__main__")')
    assert 'torch stand-ins' in run_python(code, torch_ops=True)
    assert 'compiled' in run_python(code, torch_ops=False)
