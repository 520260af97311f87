"""Tiny generated COCO datasets for tests (no download, deterministic by seed)."""
import json
from pathlib import Path

import cv2
import numpy as np


def make_tiny_coco(root, n_images=4, size=128, num_classes=1, cells_per_image=6,
                   cell_size=16, seed=0, split='train'):
    """Write ``n_images`` PNGs with dark round "cells" and a COCO file for them.

    Cells of class ``c`` get a distinct intensity so a detector can tell classes apart.
    Returns the path of the annotation file, ``<root>/annotations/<split>.json``.
    """
    rng = np.random.default_rng(seed)
    root = Path(root)
    (root / 'images').mkdir(parents=True, exist_ok=True)
    (root / 'annotations').mkdir(parents=True, exist_ok=True)
    images, annotations = [], []
    for i in range(n_images):
        img = np.full((size, size, 3), (200, 170, 220), np.uint8)  # BGR pink
        img = (img + rng.normal(0, 6, img.shape)).clip(0, 255).astype(np.uint8)
        name = f'{split}_{i:03d}.png'
        for _ in range(cells_per_image):
            cx, cy = rng.uniform(cell_size, size - cell_size, 2)
            cls = int(rng.integers(num_classes))
            shade = 60 + 50 * cls
            cv2.circle(img, (int(cx), int(cy)), cell_size // 2,
                       (shade + 40, shade, shade + 20), -1)
            annotations.append(dict(
                id=len(annotations) + 1, image_id=i + 1, category_id=cls + 1,
                bbox=[float(cx - cell_size / 2), float(cy - cell_size / 2),
                      float(cell_size), float(cell_size)],
                area=float(cell_size * cell_size), iscrowd=0,
                point=[float(cx), float(cy)]))
        cv2.imwrite(str(root / 'images' / name), img)
        images.append(dict(id=i + 1, file_name=name, width=size, height=size,
                           source=name, x0=0, y0=0))
    categories = [dict(id=c + 1, name=f'cell{c}') for c in range(num_classes)]
    ann_file = root / 'annotations' / f'{split}.json'
    ann_file.write_text(json.dumps(dict(
        images=images, annotations=annotations, categories=categories)))
    return str(ann_file)


REPO = Path(__file__).resolve().parents[1]


def write_tiny_config(path, data_root, num_classes=1, max_iters=2, batch_size=2,
                      extra='', model='faster-rcnn_r18-slim_fpn.py'):
    """Write a complete slim detector config (Faster R-CNN by default) training on
    ``make_tiny_coco`` data.

    The config composes the shipped model and runtime bases; ``extra`` is appended
    verbatim (Python config syntax) to override anything, e.g. the losses. ``model``
    is another base of ``configs/_base_/models`` (its box heads keep their one class).
    """
    classes = tuple(f'cell{c}' for c in range(num_classes))
    base = REPO / 'configs' / '_base_'
    classes_line = f'model = dict(roi_head=dict(bbox_head=dict(num_classes={num_classes})))' \
        if model.startswith('faster-rcnn') else ''
    text = f"""
_base_ = [{str(base / 'models' / model)!r},
          {str(base / 'default_runtime.py')!r}]
data_root = {str(data_root) + '/'!r}
metainfo = dict(classes={classes!r})
pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations', with_bbox=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackDetInputs'),
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale_factor=1.0),  # no resizing; sets scale_factor
    dict(type='LoadAnnotations', with_bbox=True),
    dict(type='PackDetInputs',
         meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor')),
]
dataset = dict(type='CocoDataset', data_root=data_root, metainfo=metainfo,
               ann_file='annotations/train.json', data_prefix=dict(img='images/'))
train_dataloader = dict(
    batch_size={batch_size}, num_workers=0, persistent_workers=False,
    sampler=dict(type='InfiniteSampler', shuffle=True),
    dataset=dict(dataset, pipeline=pipeline, filter_cfg=dict(filter_empty_gt=False)))
val_dataloader = dict(
    batch_size=1, num_workers=0, persistent_workers=False, drop_last=False,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(dataset, pipeline=test_pipeline, test_mode=True))
test_dataloader = val_dataloader
val_evaluator = dict(type='CocoMetric', ann_file=data_root + 'annotations/train.json',
                     metric='bbox')
test_evaluator = val_evaluator
{classes_line}
train_cfg = dict(type='IterBasedTrainLoop', max_iters={max_iters}, val_interval=10**9)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
optim_wrapper = dict(type='OptimWrapper', optimizer=dict(type='Adam', lr=1e-3))
param_scheduler = []
default_hooks = dict(checkpoint=dict(interval={max_iters}), logger=dict(interval=1))
randomness = dict(seed=0)
"""
    Path(path).write_text(text + extra)
    return str(path)


def pu_model_extra(rpn_prior, roi_prior):
    """Config text (``write_tiny_config``'s ``extra``) giving the tiny binary model PU
    losses in both stages: ``PURPNHead`` with ``PULoss(rpn_prior)``, RoI head with
    ``PULoss(roi_prior)``."""
    return f"""
model = dict(
    rpn_head=dict(type='PURPNHead',
                  loss_cls=dict(_delete_=True, type='PULoss', prior={rpn_prior},
                                use_sigmoid=True)),
    roi_head=dict(bbox_head=dict(num_classes=1,
                                 loss_cls=dict(_delete_=True, type='PULoss',
                                               prior={roi_prior}))))
"""
