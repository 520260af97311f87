"""VGG16 backbone: stride, torchvision parameter layout, pretrained loading, freezing."""
import pytest
import torch

import mmdet_pu  # noqa: F401  (registers VGG16)
from mmdet.registry import MODELS

# torchvision vgg16 ``features`` convolutions: index -> (out, in) channels
TORCHVISION_VGG16_CONVS = {
    0: (64, 3), 2: (64, 64), 5: (128, 64), 7: (128, 128), 10: (256, 128),
    12: (256, 256), 14: (256, 256), 17: (512, 256), 19: (512, 512), 21: (512, 512),
    24: (512, 512), 26: (512, 512), 28: (512, 512)}


def fake_torchvision_vgg16():
    """A state dict in torchvision's vgg16 layout, every tensor a distinct constant."""
    state = {}
    for n, (index, (out_ch, in_ch)) in enumerate(TORCHVISION_VGG16_CONVS.items()):
        state[f'features.{index}.weight'] = torch.full((out_ch, in_ch, 3, 3), n + 1.)
        state[f'features.{index}.bias'] = torch.full((out_ch, ), -(n + 1.))
    for index, (out_f, in_f) in {0: (4096, 25088), 3: (4096, 4096),
                                 6: (1000, 4096)}.items():
        state[f'classifier.{index}.weight'] = torch.full((out_f, in_f), 0.01 * index)
        state[f'classifier.{index}.bias'] = torch.full((out_f, ), 0.02 * index)
    return state


def test_output_is_conv5_3_at_stride_16():
    backbone = MODELS.build(dict(type='VGG16'))
    with torch.no_grad():
        feats = backbone(torch.rand(1, 3, 128, 96))
    assert isinstance(feats, tuple) and len(feats) == 1
    assert feats[0].shape == (1, 512, 8, 6)
    assert (feats[0] >= 0).all()  # ends with conv5_3's ReLU
    assert backbone.out_channels == 512


def test_parameter_names_and_shapes_follow_torchvision():
    backbone = MODELS.build(dict(type='VGG16'))
    shapes = {k: tuple(v.shape) for k, v in backbone.state_dict().items()}
    expected = {}
    for index, (out_ch, in_ch) in TORCHVISION_VGG16_CONVS.items():
        expected[f'features.{index}.weight'] = (out_ch, in_ch, 3, 3)
        expected[f'features.{index}.bias'] = (out_ch, )
    assert shapes == expected


def test_loads_torchvision_state_dict_with_pretrained_init_cfg(tmp_path):
    state = fake_torchvision_vgg16()
    path = tmp_path / 'vgg16_torchvision.pth'
    torch.save(state, path)
    backbone = MODELS.build(dict(
        type='VGG16', init_cfg=dict(type='Pretrained', checkpoint=str(path))))
    backbone.init_weights()
    for name, param in backbone.state_dict().items():
        assert torch.equal(param, state[name]), name


def test_random_init_is_kaiming_fan_out():
    backbone = MODELS.build(dict(type='VGG16'))
    backbone.init_weights()
    conv = backbone.features[28]
    expected_std = (2 / (512 * 9)) ** 0.5  # fan_out = 512 * 3 * 3
    assert conv.weight.std().item() == pytest.approx(expected_std, rel=0.05)
    assert torch.count_nonzero(conv.bias) == 0


def test_frozen_stages_stop_gradients_of_leading_blocks():
    backbone = MODELS.build(dict(type='VGG16', frozen_stages=2))
    trainable = {k.split('.')[1] for k, p in backbone.named_parameters()
                 if p.requires_grad}
    assert trainable == {str(i) for i in (10, 12, 14, 17, 19, 21, 24, 26, 28)}
    frozen_all = MODELS.build(dict(type='VGG16', frozen_stages=5))
    assert not any(p.requires_grad for p in frozen_all.parameters())


def test_invalid_frozen_stages_is_refused():
    with pytest.raises(ValueError, match='frozen_stages'):
        MODELS.build(dict(type='VGG16', frozen_stages=6))
