"""VGG16 backbone of the original Faster R-CNN (conv1_1 ... conv5_3, stride 16)."""
from typing import Tuple

import torch.nn as nn
from mmengine.model import BaseModule
from torch import Tensor

from mmdet.registry import MODELS
from mmdet.utils import OptMultiConfig

# (number of 3x3 convolutions, output channels) of the five VGG16 blocks.
VGG16_BLOCKS = ((2, 64), (2, 128), (3, 256), (3, 512), (3, 512))


@MODELS.register_module()
class VGG16(BaseModule):
    """VGG16 (Simonyan and Zisserman, 2015) as the Faster R-CNN backbone.

    The paper's detector (Section 2.3) is Faster R-CNN with an ImageNet-initialised
    VGG16. As in Ren et al. (2015) the network ends at conv5_3 (+ ReLU): pool5 and
    the fully connected layers are dropped, so the single output feature map has
    512 channels at stride 16.

    Layers live in one ``nn.Sequential`` called ``features`` with torchvision's
    indices, so the convolutions are ``features.{0,2,5,7,10,12,14,17,19,21,24,26,28}``
    and a torchvision ``vgg16`` state dict loads as is (its ``classifier.*`` and the
    missing pool5 have no counterpart here and are reported as unexpected keys)::

        backbone=dict(type='VGG16',
                      init_cfg=dict(type='Pretrained', checkpoint='vgg16.pth'))

    Args:
        frozen_stages (int): Number of leading blocks (conv1, conv2, ...) whose
            parameters are not trained, 0 to 5. Faster R-CNN fine-tuning from
            ImageNet weights usually freezes 2; the default 0 trains everything,
            which is what a randomly initialised network needs.
        init_cfg (dict | list[dict], optional): Initialisation config. By default
            the convolutions get torchvision's VGG initialisation (Kaiming normal,
            fan_out, zero bias).
    """

    def __init__(self,
                 frozen_stages: int = 0,
                 init_cfg: OptMultiConfig = dict(
                     type='Kaiming', layer='Conv2d', mode='fan_out',
                     nonlinearity='relu', distribution='normal', bias=0.)
                 ) -> None:
        super().__init__(init_cfg=init_cfg)
        if not 0 <= frozen_stages <= len(VGG16_BLOCKS):
            raise ValueError(
                f'VGG16: frozen_stages must be in [0, {len(VGG16_BLOCKS)}], '
                f'got {frozen_stages}')
        self.frozen_stages = frozen_stages

        layers = []
        # index of the first layer of each block inside ``features``
        self.block_starts = []
        in_channels = 3
        for block, (num_convs, channels) in enumerate(VGG16_BLOCKS):
            self.block_starts.append(len(layers))
            for _ in range(num_convs):
                layers += [nn.Conv2d(in_channels, channels, 3, padding=1),
                           nn.ReLU(inplace=True)]
                in_channels = channels
            if block < len(VGG16_BLOCKS) - 1:  # pool5 is dropped: stride 16
                layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
        self.features = nn.Sequential(*layers)
        self.out_channels = in_channels
        self._freeze_stages()

    def _freeze_stages(self) -> None:
        """Stop gradients for the first ``frozen_stages`` blocks."""
        if self.frozen_stages == 0:
            return
        end = (self.block_starts[self.frozen_stages]
               if self.frozen_stages < len(self.block_starts) else len(self.features))
        for layer in self.features[:end]:
            for param in layer.parameters():
                param.requires_grad = False

    def forward(self, x: Tensor) -> Tuple[Tensor]:
        """Return the conv5_3 feature map (stride 16) as a 1-tuple."""
        return (self.features(x), )
