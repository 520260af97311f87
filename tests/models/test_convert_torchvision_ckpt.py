"""tools/convert_torchvision_ckpt.py (a self-contained command line): torchvision weights
-> load_from checkpoints."""
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmengine.runner import load_checkpoint

import mmdet_pu  # noqa: F401
from mmdet.registry import MODELS
from tests._cli import run_script
from tests._data import REPO
from tests.models.test_vgg16 import fake_torchvision_vgg16


def convert_file(src, dst):
    """Run the tool on ``src``; the process."""
    return run_script('tools/convert_torchvision_ckpt.py', src, dst)


def refused(tmp_path, state):
    """The tool's error message for the state dict ``state``."""
    torch.save(state, tmp_path / 'in.pth')
    proc = convert_file(tmp_path / 'in.pth', tmp_path / 'out.pth')
    assert proc.returncode != 0 and not (tmp_path / 'out.pth').exists()
    return proc.stderr


def build_model(base):
    init_default_scope('mmdet')
    return MODELS.build(Config.fromfile(str(REPO / f'configs/_base_/models/{base}')).model)


def test_vgg16_weights_reach_backbone_and_fc6_fc7(tmp_path):
    src, dst = tmp_path / 'vgg16.pth', tmp_path / 'out' / 'vgg16_frcnn.pth'
    state = fake_torchvision_vgg16()
    torch.save(state, src)
    proc = convert_file(src, dst)
    assert proc.returncode == 0, proc.stderr[-3000:]
    model = build_model('faster-rcnn_vgg16.py')
    load_checkpoint(model, str(dst), map_location='cpu', strict=False)
    for name, param in model.backbone.state_dict().items():
        assert torch.equal(param, state[name]), name
    fcs = model.roi_head.bbox_head.shared_fcs
    assert torch.equal(fcs[0].weight, state['classifier.0.weight'])
    assert torch.equal(fcs[1].bias, state['classifier.3.bias'])
    assert not any(k.startswith('classifier') or 'fc_cls' in k
                   for k in torch.load(dst, weights_only=True)['state_dict'])


def test_resnet_weights_reach_the_backbone(tmp_path):
    model = build_model('faster-rcnn_r18-slim_fpn.py')
    # torchvision's resnet names are mmdet's ResNet names, plus the classifier
    state = {k: torch.rand_like(v) if v.is_floating_point() else v
             for k, v in model.backbone.state_dict().items()}
    state.update({'fc.weight': torch.rand(1000, 512), 'fc.bias': torch.rand(1000)})
    torch.save(dict(model=state), tmp_path / 'resnet18.pth')  # wrapped in 'model'
    path = tmp_path / 'r18.pth'
    proc = convert_file(tmp_path / 'resnet18.pth', path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert 'backbone.fc.weight' not in torch.load(path, weights_only=True)['state_dict']
    load_checkpoint(model, str(path), map_location='cpu', strict=False)
    for name, param in model.backbone.state_dict().items():
        assert torch.equal(param, state[name]), name


def test_unknown_or_wrong_checkpoints_are_refused(tmp_path):
    assert 'neither' in refused(tmp_path, {'conv.weight': torch.zeros(1)})
    state = fake_torchvision_vgg16()
    del state['features.28.bias']
    assert "missing ['features.28.bias']" in refused(tmp_path, state)
    state = fake_torchvision_vgg16()
    state['classifier.0.weight'] = torch.zeros(4096, 9216)
    assert 'classifier.0.weight: expected shape' in refused(tmp_path, state)
    assert 'in.pth: expected a torchvision state dict' in refused(tmp_path, [1, 2])
