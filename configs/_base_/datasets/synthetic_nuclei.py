# Synthetic regime "nuclei": dense nuclei (35-55 per 256 px tile), every nucleus a cell.
# Prepare: python data_prep/prepare.py synthetic --variant nuclei \
#     --out data/synthetic_nuclei
_base_ = './synthetic_binary.py'

data_root = 'data/synthetic_nuclei/'
metainfo = dict(classes=('nucleus', ), palette=[(128, 0, 128)])
prepare_cmd = ('python data_prep/prepare.py synthetic --variant nuclei '
               '--out data/synthetic_nuclei')

# the loaders of ./synthetic_binary.py, pointed at this regime's data
dataset_fields = dict(data_root=data_root, prepare_cmd=prepare_cmd, metainfo=metainfo)
train_dataloader = dict(dataset=dataset_fields)
val_dataloader = dict(dataset=dataset_fields)
test_dataloader = dict(dataset=dataset_fields)
