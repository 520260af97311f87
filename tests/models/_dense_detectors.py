"""mmdet's own one-stage and cascade detector configs, slimmed for CPU tests."""
import copy

import torch
from mmengine.hub import get_config
from mmengine.structures import InstanceData

from mmdet.structures import DetDataSample

#: name: (mmdet config, mmdet head, PU head, PU loss)
DENSE = {
    'retinanet': ('retinanet/retinanet_r50_fpn_1x_coco.py', 'RetinaHead', 'PURetinaHead',
                  'FocalPULoss'),
    'atss': ('atss/atss_r50_fpn_1x_coco.py', 'ATSSHead', 'PUATSSHead', 'FocalPULoss'),
    'fcos': ('fcos/fcos_r50-caffe_fpn_gn-head_1x_coco.py', 'FCOSHead', 'PUFCOSHead',
             'FocalPULoss'),
    'gfl': ('gfl/gfl_r50_fpn_1x_coco.py', 'GFLHead', 'PUGFLHead', 'QualityFocalPULoss'),
    'rtmdet': ('rtmdet/rtmdet_tiny_8xb32-300e_coco.py', 'RTMDetSepBNHead',
               'PURTMDetSepBNHead', 'QualityFocalPULoss'),
}
CASCADE = 'cascade_rcnn/cascade-rcnn_r50_fpn_1x_coco.py'
_CONFIGS = {}


def mmdet_model(config):
    """A copy of the ``model`` dict of an installed mmdet config."""
    if config not in _CONFIGS:
        _CONFIGS[config] = get_config(f'mmdet::{config}').model
    return copy.deepcopy(_CONFIGS[config])


def _no_sync_bn(node):
    """SyncBN -> BN everywhere (CPU, one process)."""
    if isinstance(node, dict):
        if node.get('type') == 'SyncBN':
            node['type'] = 'BN'
        for child in node.values():
            _no_sync_bn(child)
    elif isinstance(node, list):
        for child in node:
            _no_sync_bn(child)


def slim_dense_model(name, num_classes, channels=64):
    """mmdet's detector ``name`` with a ResNet-18 (RTMDet: CSPNeXt-tiny) backbone,
    ``channels`` neck/head channels, one stacked conv and random init."""
    model = mmdet_model(DENSE[name][0])
    _no_sync_bn(model)
    model.backbone.init_cfg = None
    if model.backbone.type == 'ResNet':
        model.backbone.depth = 18
        model.neck.in_channels = [64, 128, 256, 512]
    model.neck.out_channels = channels
    head = model.bbox_head
    head.update(num_classes=num_classes, in_channels=channels, feat_channels=channels,
                stacked_convs=1)
    return model


def dense_head_cfg(name, num_classes, channels=32, **kwargs):
    """The bbox head of mmdet's detector ``name`` as the detector builds it (with the
    model's train and test settings), ``channels`` wide."""
    model = slim_dense_model(name, num_classes, channels)
    head = model.bbox_head
    head.update(train_cfg=model.get('train_cfg'), test_cfg=model.get('test_cfg'))
    head.update(kwargs)
    return head


def head_strides(head_cfg):
    generator = head_cfg.get('anchor_generator') or head_cfg.get('prior_generator')
    if generator is not None:
        return generator['strides']
    return head_cfg['strides']


def ground_truth(num_images, num_classes, size, seed, sizes=(24, 32, 64, 112)):
    """Square cells of the given sizes at random places, random classes."""
    gen = torch.Generator().manual_seed(seed)
    instances = []
    for _ in range(num_images):
        side = torch.tensor(sizes, dtype=torch.float32)[:, None]
        xy = torch.rand(len(sizes), 2, generator=gen) * (size - side)
        instances.append(InstanceData(
            bboxes=torch.cat([xy, xy + side], dim=1),
            labels=torch.randint(0, num_classes, (len(sizes),), generator=gen)))
    return instances


def data_samples(num_images, num_classes, size, seed):
    samples = []
    for gt in ground_truth(num_images, num_classes, size, seed):
        sample = DetDataSample(metainfo=dict(
            img_shape=(size, size), ori_shape=(size, size), pad_shape=(size, size),
            batch_input_shape=(size, size), scale_factor=(1.0, 1.0)))
        sample.gt_instances = gt
        samples.append(sample)
    return samples


def detector_batch(model, num_images, num_classes, size, seed):
    """A preprocessed batch of noise images with darker squares where the cells are."""
    gen = torch.Generator().manual_seed(seed)
    samples = data_samples(num_images, num_classes, size, seed)
    inputs = []
    for sample in samples:
        img = torch.randint(150, 256, (3, size, size), dtype=torch.uint8, generator=gen)
        for box, label in zip(sample.gt_instances.bboxes.int().tolist(),
                              sample.gt_instances.labels.tolist()):
            img[:, box[1]:box[3], box[0]:box[2]] = 40 + 40 * label
        inputs.append(img)
    return model.data_preprocessor(dict(inputs=inputs, data_samples=samples), True)
