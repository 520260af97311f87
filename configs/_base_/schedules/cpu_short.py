# Short CPU schedule for the slim model on synthetic data (demo, tests): the paper's
# optimiser (Adam, learning rate 1e-3) for 300 iterations, validation at the end, plus two
# additions the paper does not state (docs/method.md#departures): the learning rate drops
# x0.1 for the last fifth of training (a constant rate ends on a noisy iterate), and
# gradients are clipped at norm 10. The step follows the length:
# `train_cfg = dict(max_iters=600, val_interval=600)` trains twice as long.
train_cfg = dict(type='IterBasedTrainLoop', max_iters=300, val_interval=300)
optim_wrapper = dict(
    type='OptimWrapper', optimizer=dict(type='Adam', lr=1e-3),
    clip_grad=dict(max_norm=10, norm_type=2))
param_scheduler = [
    dict(type='RelativeMultiStepLR', by_epoch=False, fractions=[0.8], gamma=0.1)]
auto_scale_lr = dict(enable=False, base_batch_size=8)
