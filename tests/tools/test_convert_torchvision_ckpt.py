"""tools/convert_torchvision_ckpt.py: torchvision weights -> load_from checkpoints."""
import pytest
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmengine.runner import load_checkpoint

import mmdet_pu  # noqa: F401
from mmdet.registry import MODELS
from tests._data import REPO
from tests.models.test_vgg16 import fake_torchvision_vgg16
from tests.tools import load_tool

converter = load_tool('convert_torchvision_ckpt')
convert, main = converter.convert, converter.main


def build_model(base):
    init_default_scope('mmdet')
    return MODELS.build(Config.fromfile(str(REPO / f'configs/_base_/models/{base}')).model)


def test_vgg16_weights_reach_backbone_and_fc6_fc7(tmp_path):
    src, dst = tmp_path / 'vgg16.pth', tmp_path / 'out' / 'vgg16_frcnn.pth'
    state = fake_torchvision_vgg16()
    torch.save(state, src)
    main([str(src), str(dst)])
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
    converted = convert(state)
    assert 'backbone.fc.weight' not in converted
    path = tmp_path / 'r18.pth'
    torch.save(dict(state_dict=converted), path)
    load_checkpoint(model, str(path), map_location='cpu', strict=False)
    for name, param in model.backbone.state_dict().items():
        assert torch.equal(param, state[name]), name


def test_unknown_or_wrong_checkpoints_are_refused(tmp_path):
    with pytest.raises(ValueError, match='neither'):
        convert({'conv.weight': torch.zeros(1)})
    state = fake_torchvision_vgg16()
    del state['features.28.bias']
    with pytest.raises(ValueError, match=r"missing \['features.28.bias'\]"):
        convert(state)
    state = fake_torchvision_vgg16()
    state['classifier.0.weight'] = torch.zeros(4096, 9216)
    with pytest.raises(ValueError, match=r'classifier.0.weight: expected shape'):
        convert(state)
    path = tmp_path / 'not_a_state_dict.pth'
    torch.save([1, 2], path)
    with pytest.raises(ValueError, match='not_a_state_dict.pth'):
        main([str(path), str(tmp_path / 'out.pth')])
