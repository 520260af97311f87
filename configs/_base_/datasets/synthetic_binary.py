# Synthetic H&E-like images, binary: mitosis-like cells among unannotated look-alikes.
# Prepare: python data_prep/prepare.py synthetic --variant binary --out data/synthetic_binary
# 512 px images split 4:1:1 by image (fold0 only), tiled 256 px for train/val; the test
# images are evaluated whole by tiled inference (TiledTestLoop).
_base_ = './_cell_coco.py'

data_root = 'data/synthetic_binary/'
num_classes = 1
metainfo = dict(classes=('mitosis', ), palette=[(220, 20, 60)])
prepare_cmd = ('python data_prep/prepare.py synthetic --variant binary '
               '--out data/synthetic_binary')

# the loaders of ./_cell_coco.py, pointed at this dataset
dataset_fields = dict(data_root=data_root, metainfo=metainfo, prepare_cmd=prepare_cmd)
train_dataloader = dict(
    batch_size=4,
    dataset=dict(dataset_fields, pipeline=_base_.all_flips_train_pipeline))
val_dataloader = dict(dataset=dataset_fields)
test_dataloader = dict(dataset=dataset_fields)
# Overlapping tiles, each keeping the cells centred in its core (TiledTestLoop): a cell
# cut by one tile's edge is found whole by the next (docs/experiments.md, "Tile borders").
test_cfg = dict(type='TiledTestLoop', tile_size=256, overlap=64, nms_iou=0.3)
