# Synthetic regime "small": small mitosis-like cells (12-16 px) among three times the look-alikes.
# Prepare: python data_prep/prepare.py synthetic --variant binary --cell-size 12 16 --lookalikes 3 \
#     --out data/synthetic_small
_base_ = './synthetic_binary.py'

data_root = 'data/synthetic_small/'
prepare_cmd = ('python data_prep/prepare.py synthetic --variant binary --cell-size 12 16 '
               '--lookalikes 3 --out data/synthetic_small')

# the loaders of ./synthetic_binary.py, pointed at this regime's data
dataset_fields = dict(data_root=data_root, prepare_cmd=prepare_cmd)
train_dataloader = dict(dataset=dataset_fields)
val_dataloader = dict(dataset=dataset_fields)
test_dataloader = dict(dataset=dataset_fields)
