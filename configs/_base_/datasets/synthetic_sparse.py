# Synthetic regime "sparse": sparse mitosis-like cells (2-5 per 256 px tile) among look-alikes.
# Prepare: python data_prep/prepare.py synthetic --variant binary --cells-per-tile 2 5 \
#     --out data/synthetic_sparse
_base_ = './synthetic_binary.py'

data_root = 'data/synthetic_sparse/'
prepare_cmd = ('python data_prep/prepare.py synthetic --variant binary --cells-per-tile 2 5 '
               '--out data/synthetic_sparse')

# the loaders of ./synthetic_binary.py, pointed at this regime's data
dataset_fields = dict(data_root=data_root, prepare_cmd=prepare_cmd)
train_dataloader = dict(dataset=dataset_fields)
val_dataloader = dict(dataset=dataset_fields)
test_dataloader = dict(dataset=dataset_fields)
