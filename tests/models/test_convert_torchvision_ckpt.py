"""tools/convert_torchvision_ckpt.py (a self-contained command line): torchvision weights
-> load_from checkpoints; and the backbone-only options of docs/pretrained.md."""
import pytest
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmengine.runner import load_checkpoint

import mmdet_pu  # noqa: F401
from mmdet.registry import MODELS
from mmdet_pu.engine.launch import parse_cfg_options
from tests._cli import run_script
from tests._data import REPO
from tests.models.test_vgg16 import fake_torchvision_vgg16

#: The smallest state dict the tool takes for a torchvision ResNet.
TINY_RESNET = {'layer1.0.conv1.weight': torch.ones(2, 2, 1, 1), 'fc.weight': torch.ones(1)}


def convert_file(src, dst):
    """Run the tool on ``src``; the process."""
    return run_script('tools/convert_torchvision_ckpt.py', src, dst)


def refused_file(src, dst):
    """The tool's error message for the input file ``src``: one line naming it, exit
    status 2, nothing written to ``dst``."""
    proc = convert_file(src, dst)
    assert proc.returncode == 2 and not dst.exists()
    assert proc.stderr.startswith(f'convert_torchvision_ckpt.py: error: {src}: ')
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    return proc.stderr


def refused(tmp_path, state):
    """The tool's error message for the state dict ``state``."""
    torch.save(state, tmp_path / 'in.pth')
    return refused_file(tmp_path / 'in.pth', tmp_path / 'out.pth')


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


def test_unreadable_files_are_refused_in_one_line(tmp_path):
    src, dst = tmp_path / 'in.pth', tmp_path / 'out.pth'
    src.write_bytes(b'not a checkpoint')
    assert 'not a PyTorch checkpoint, or a corrupt or truncated one' in refused_file(src, dst)
    torch.save(TINY_RESNET, src)
    src.write_bytes(src.read_bytes()[:200])  # an interrupted download
    assert 'corrupt or truncated' in refused_file(src, dst)
    torch.save({'conv.weight': torch.zeros(1), 'note': Config()}, src)
    assert 'it holds mmengine.config.config.Config, not only tensors' in refused_file(
        src, dst)


def test_an_interrupted_write_leaves_the_output_as_it_was(tmp_path, monkeypatch):
    src, dst = tmp_path / 'resnet.pth', tmp_path / 'out.pth'
    torch.save(TINY_RESNET, src)
    dst.write_bytes(b'previous')

    def interrupted_save(obj, f):
        f.write(b'half a checkpoint')
        raise RuntimeError('interrupted')

    monkeypatch.setattr(torch, 'save', interrupted_save)
    proc = convert_file(src, dst)
    assert proc.returncode == 1 and 'RuntimeError: interrupted' in proc.stderr
    assert dst.read_bytes() == b'previous'
    assert sorted(p.name for p in tmp_path.iterdir()) == ['out.pth', 'resnet.pth']


def documented_backbone_options():
    """``{'VGG16': [...], 'ResNet': [...]}``: the ``--cfg-options`` of the "backbone
    only" block of docs/pretrained.md, by the comment line above them."""
    text = (REPO / 'docs' / 'pretrained.md').read_text()
    block = text.split('### Alternative: backbone only')[1].split('```bash')[1]
    options = {}
    for line in block.split('```')[0].splitlines():
        if line.startswith('# '):
            current = options.setdefault(line.split()[1], [])
        elif line.strip():
            current.extend(word for word in line.split() if '=' in word)
    return options


@pytest.mark.parametrize('family, config', [
    ('VGG16', 'pu/mitos14_vgg16_keep1_pu.py'),
    ('ResNet', 'baselines/mitos14_r50_keep1_ce.py'),
    ('ResNet', 'dense/mitos14_retinanet_r50_keep1_pu.py')])
def test_documented_backbone_options_give_a_pretrained_backbone(family, config):
    options = documented_backbone_options()[family]
    checkpoint = options[-1].split('=', 1)[1]
    cfg = Config.fromfile(str(REPO / 'configs' / config))
    cfg.merge_from_dict(parse_cfg_options(options))
    assert cfg.model.backbone.init_cfg == dict(type='Pretrained', checkpoint=checkpoint)
