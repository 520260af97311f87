# Training schedule of Section 2.3: Adam, learning rate 1e-3, 2580 iterations of batch 8
# (the batch size lives in the dataset base), the model of the last iteration is kept.
# The paper gives only the initial learning rate; it stays constant here.
# Validation runs once, at the end.
train_cfg = dict(type='IterBasedTrainLoop', max_iters=2580, val_interval=2580)
optim_wrapper = dict(type='OptimWrapper', optimizer=dict(type='Adam', lr=1e-3))
param_scheduler = []
# --auto-scale-lr rescales the learning rate linearly for a total batch other than 8.
auto_scale_lr = dict(enable=False, base_batch_size=8)
