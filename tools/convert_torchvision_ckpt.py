"""Convert a torchvision ImageNet checkpoint into detector weights for ``load_from``.

    python tools/convert_torchvision_ckpt.py vgg16-397923af.pth checkpoints/vgg16_frcnn.pth
    python tools/convert_torchvision_ckpt.py resnet50-0676ba61.pth checkpoints/r50_frcnn.pth

The input is a torchvision ``vgg16`` or ``resnet50`` / ``resnet101`` state dict (a plain
``{name: tensor}`` file, or one wrapped in ``state_dict`` / ``model``), downloaded once
by the user; nothing is fetched here. The output holds the names of the mmdet_pu
Faster R-CNN models (configs/_base_/models):

* VGG16: ``features.*`` -> ``backbone.features.*`` (conv1_1 .. conv5_3) and the
  ImageNet fc6 / fc7 (``classifier.0`` / ``classifier.3``) ->
  ``roi_head.bbox_head.shared_fcs.0`` / ``.1`` (the 4096-d box head of Ren et al.);
  the 1000-way ``classifier.6`` is dropped.
* ResNet: every tensor but ``fc.*`` -> ``backbone.*`` (mmdet's ResNet uses
  torchvision's names).

Train with ``--cfg-options load_from=<output>`` (docs/pretrained.md). Any other input (an
unreadable file, other parameter names or shapes) is refused with one line naming the
file and the offending keys (exit status 2); the output is written atomically.
"""
import argparse
import pickle
import re
import sys
from collections import OrderedDict
from pathlib import Path

import torch

from cellio.atomic import atomic_open
from cellio.cli import report_user_errors

VGG16_CONVS = (0, 2, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28)
VGG16_FCS = {'classifier.0': ('roi_head.bbox_head.shared_fcs.0', (4096, 25088)),
             'classifier.3': ('roi_head.bbox_head.shared_fcs.1', (4096, 4096))}


def load_state_dict(path):
    """The ``{name: tensor}`` mapping stored in ``path``.

    Raises:
        ValueError: naming ``path``: not a checkpoint ``torch.load`` can read with
            ``weights_only=True`` (corrupt, truncated, or holding Python objects), or not a
            state dict.
    """
    try:
        checkpoint = torch.load(path, map_location='cpu', weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError) as err:
        found = re.search(r'Unsupported global: GLOBAL (\S+)', str(err))
        reason = (f'it holds {found.group(1)}, not only tensors' if found else
                  'not a PyTorch checkpoint, or a corrupt or truncated one')
        raise ValueError(f'{path}: cannot read it with torch.load(weights_only=True): '
                         f'{reason}') from None
    for key in ('state_dict', 'model'):
        if isinstance(checkpoint, dict) and isinstance(checkpoint.get(key), dict):
            checkpoint = checkpoint[key]
    if not isinstance(checkpoint, dict) or not all(
            isinstance(v, torch.Tensor) for v in checkpoint.values()):
        raise ValueError(f'{path}: expected a torchvision state dict '
                         '({name: tensor}), got something else')
    return checkpoint


def detect_arch(state_dict):
    """``'vgg16'`` or ``'resnet'`` from the parameter names."""
    if 'features.0.weight' in state_dict:
        return 'vgg16'
    if 'layer1.0.conv1.weight' in state_dict:
        return 'resnet'
    raise ValueError('not a torchvision VGG16 or ResNet state dict: neither '
                     "'features.0.weight' nor 'layer1.0.conv1.weight' is present")


def convert_vgg16(state_dict):
    """torchvision vgg16 names -> Faster R-CNN VGG16 backbone + fc6/fc7 box head."""
    expected = {f'features.{i}.{p}' for i in VGG16_CONVS for p in ('weight', 'bias')}
    convs = {k for k in state_dict if k.startswith('features.')}
    if convs != expected:
        raise ValueError(
            'not a torchvision vgg16 (without BN) state dict: features.* differ, '
            f'missing {sorted(expected - convs)}, unexpected {sorted(convs - expected)}')
    converted = OrderedDict(
        (f'backbone.{k}', state_dict[k]) for k in sorted(
            expected, key=lambda k: (int(k.split('.')[1]), k)))
    for src, (dst, shape) in VGG16_FCS.items():
        weight = state_dict.get(f'{src}.weight')
        if weight is None or tuple(weight.shape) != shape:
            found = None if weight is None else tuple(weight.shape)
            raise ValueError(f'{src}.weight: expected shape {shape}, got {found}')
        converted[f'{dst}.weight'] = weight
        converted[f'{dst}.bias'] = state_dict[f'{src}.bias']
    return converted


def convert_resnet(state_dict):
    """torchvision resnet names -> mmdet ResNet backbone (classifier dropped)."""
    return OrderedDict((f'backbone.{k}', v) for k, v in state_dict.items()
                       if not re.match(r'fc\.', k))


def convert(state_dict):
    """Detector-named state dict for a torchvision VGG16 or ResNet state dict."""
    if detect_arch(state_dict) == 'vgg16':
        return convert_vgg16(state_dict)
    return convert_resnet(state_dict)


def convert_file(src):
    """The detector-named state dict of the torchvision checkpoint ``src``.

    Raises:
        ValueError: naming ``src`` and what is wrong with it.
    """
    state_dict = load_state_dict(src)
    try:
        return convert(state_dict)
    except ValueError as err:
        raise ValueError(f'{src}: {err}') from None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('src', help='torchvision checkpoint (.pth)')
    parser.add_argument('dst', help='output checkpoint for load_from (.pth)')
    args = parser.parse_args(argv)
    converted = convert_file(args.src)
    with atomic_open(args.dst, 'wb') as f:
        torch.save(dict(state_dict=converted, meta=dict(source=Path(args.src).name)), f)
    print(f'{args.dst}: {len(converted)} tensors')


if __name__ == '__main__':
    sys.exit(report_user_errors(main))
