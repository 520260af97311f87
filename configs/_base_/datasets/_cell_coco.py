# What every cell dataset shares: CellCocoDataset on the layout written by
# data_prep/prepare.py (docs/design.md), the pipelines, loaders, metric and loops.
# A dataset base inherits this file and sets data_root, num_classes, metainfo,
# prepare_cmd (into the three loaders), the batch size and its test loop.
dataset_type = 'CellCocoDataset'
backend_args = None
# CellCocoDataset image metadata the tiled loops and the metric read from data samples.
cell_meta_keys = ('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor',
                  'flip', 'flip_direction', 'source', 'x0', 'y0', 'tiles')

train_pipeline = [
    dict(type='LoadImageFromFile', backend_args=backend_args),
    dict(type='LoadAnnotations', with_bbox=True),
    dict(type='RandomFlip', prob=0.5),  # horizontal flip (Section 2.3)
    dict(type='PackDetInputs', meta_keys=cell_meta_keys),
]
# Our choice where the paper states only the horizontal flip: tissue has no up or down,
# so every training tile is also flipped vertically or both ways (a 180 degree turn),
# each of the four orientations with probability 1/4. The synthetic and custom datasets
# train with it (docs/experiments.md, "Closing the gap"); the paper's datasets keep
# train_pipeline.
all_flips_train_pipeline = [
    dict(type='RandomFlip', prob=[0.25, 0.25, 0.25],
         direction=['horizontal', 'vertical', 'diagonal'])
    if transform['type'] == 'RandomFlip' else transform for transform in train_pipeline]
test_pipeline = [
    dict(type='LoadImageFromFile', backend_args=backend_args),
    # no resizing; sets scale_factor, which the heads need to rescale predictions
    dict(type='Resize', scale_factor=1.0),
    dict(type='LoadAnnotations', with_bbox=True),
    dict(type='PackDetInputs', meta_keys=cell_meta_keys),
]

train_dataloader = dict(
    batch_size=8,  # Section 2.3
    num_workers=2,
    persistent_workers=True,
    sampler=dict(type='InfiniteSampler', shuffle=True),
    dataset=dict(
        type=dataset_type,
        ann_file='annotations/fold0/train.json',
        data_prefix=dict(img='images/'),
        # Every tile is kept, with or without cells: unannotated tiles are unlabeled data.
        # The experiment config sets `deletion` (configs/_base_/deletion/) on train/val.
        filter_cfg=dict(filter_empty_gt=False),
        pipeline=train_pipeline,
        backend_args=backend_args))
val_dataloader = dict(
    batch_size=1,
    num_workers=2,
    persistent_workers=True,
    drop_last=False,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(
        type=dataset_type,
        ann_file='annotations/fold0/val.json',
        data_prefix=dict(img='images/'),
        test_mode=True,
        pipeline=test_pipeline,
        backend_args=backend_args))
test_dataloader = dict(
    val_dataloader,
    # whole test images for tiled evaluation; `test.json` holds their tiles
    dataset=dict(val_dataloader['dataset'], ann_file='annotations/fold0/test_whole.json'))

# docs/method.md#evaluation: score >= 0.5, greedy matching at IoU >= 0.5 (radius=<px> for centre
# distance).
test_evaluator = dict(type='CellDetMetric', score_thr=0.5, iou_thr=0.5)
# Validation also selects a score threshold among the candidates with a PU criterion that
# needs only the (incomplete) labels: cell/pu_score_thr, used by
# `tools/test.py CONFIG CKPT --score-thr val` (mmdet_pu/evaluation/score_threshold.py).
val_evaluator = dict(
    test_evaluator,
    score_thr_candidates=[0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95])
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
