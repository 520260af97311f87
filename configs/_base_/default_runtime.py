# Runtime shared by every experiment: registration, hooks, logging, environment.
default_scope = 'mmdet'
custom_imports = dict(imports=['mmdet_pu'], allow_failed_imports=False)
# CellRunner hands the top-level `deletion` (configs/_base_/deletion/) to the training and
# validation loaders (docs/method.md#datasets-and-deletion); mmdet's tools build it too.
runner_type = 'CellRunner'
custom_hooks = []

default_hooks = dict(
    timer=dict(type='IterTimerHook'),
    logger=dict(type='LoggerHook', interval=10),
    param_scheduler=dict(type='ParamSchedulerHook'),
    # The paper keeps the model of the last iteration (Section 2.3); the latest checkpoint,
    # at least every third of the training, lets an interrupted one resume (--resume).
    checkpoint=dict(
        type='ResumableCheckpointHook', by_epoch=False, interval=500, per_training=3,
        max_keep_ckpts=1, save_last=True),
    sampler_seed=dict(type='DistSamplerSeedHook'),
    visualization=dict(type='DetVisualizationHook'),
    # how often the PU risk's max{0, .} acts, per PU loss (nothing without one)
    pu_correction=dict(type='PUCorrectionLoggerHook'))

env_cfg = dict(
    cudnn_benchmark=False,
    mp_cfg=dict(mp_start_method='fork', opencv_num_threads=0),
    # tools/train.py switches to gloo when no GPU is available.
    dist_cfg=dict(backend='nccl'))

vis_backends = [dict(type='LocalVisBackend')]
visualizer = dict(
    type='DetLocalVisualizer', vis_backends=vis_backends, name='visualizer')
log_processor = dict(type='LogProcessor', window_size=10, by_epoch=False)
# Every run is seeded (Python, numpy, torch, the samplers and the dataloader workers), so the
# same seed and thread count give the same losses and metrics on a CPU; another seed:
# --cfg-options randomness.seed=K (tools/repeat.py runs several). Bitwise equality on GPUs
# also needs randomness.deterministic=True (slower cuDNN/CUDA kernels).
randomness = dict(seed=0)
log_level = 'INFO'
load_from = None
resume = False
