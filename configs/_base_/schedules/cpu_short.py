# Short CPU schedule for the slim model on synthetic data (demo, smoke tests): the paper's
# optimiser (Adam, learning rate 1e-3, constant) for 300 iterations, validation at the end.
train_cfg = dict(type='IterBasedTrainLoop', max_iters=300, val_interval=300)
optim_wrapper = dict(type='OptimWrapper', optimizer=dict(type='Adam', lr=1e-3))
param_scheduler = []
auto_scale_lr = dict(enable=False, base_batch_size=8)
