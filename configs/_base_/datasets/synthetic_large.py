# Synthetic regime "large": large mitosis-like cells (28-40 px) among look-alikes.
# Prepare: python data_prep/prepare.py synthetic --variant binary --cell-size 28 40 \
#     --out data/synthetic_large
_base_ = './synthetic_binary.py'

data_root = 'data/synthetic_large/'
prepare_cmd = ('python data_prep/prepare.py synthetic --variant binary --cell-size 28 40 '
               '--out data/synthetic_large')

# the loaders of ./synthetic_binary.py, pointed at this regime's data
dataset_fields = dict(data_root=data_root, prepare_cmd=prepare_cmd)
train_dataloader = dict(dataset=dataset_fields)
val_dataloader = dict(dataset=dataset_fields)
test_dataloader = dict(dataset=dataset_fields)
