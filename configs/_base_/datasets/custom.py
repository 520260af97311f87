# Your own partially annotated images or slides: QuPath GeoJSON exports or a CSV of
# points converted by data_prep/prepare.py qupath (docs/datasets.md, "Your own data").
# Prepare: python data_prep/prepare.py qupath --src <images + <stem>.geojson> \
#              --out data/custom [--classes a,b] [--group-regex '(slide\d+)']
# The annotated regions are split 4:1:1 by image (or slide), tiled 256 px (--tile) for
# train/val, and the test regions are evaluated whole by tiled inference. All three
# splits hold the annotations as the user made them: test precision is a lower bound
# unless the test regions are completely annotated.
#
# Classes: `metainfo.classes` must be the converter's classes in its order (it prints
# them; they are the `categories` of the COCO files, with their QuPath colours), and the
# model's num_classes their number. The default is one class named `cell` (cells without
# classification). An experiment config composes this file like any dataset base
# (configs/custom/custom_pu.py); for other classes, derive from it, e.g.
#
#   _base_ = './custom_pu.py'                          # a file in configs/custom/
#   metainfo = dict(classes=('mitosis', ), palette=[(220, 20, 60)])
#   train_dataloader = dict(dataset=dict(metainfo=metainfo))
#   val_dataloader = dict(dataset=dict(metainfo=metainfo))
#   test_dataloader = dict(dataset=dict(metainfo=metainfo))
#
# (several classes: docs/datasets.md shows the multi-class PU config). Another location:
# --cfg-options {train,val,test}_dataloader.dataset.data_root=data/other/
_base_ = './_cell_coco.py'

data_root = 'data/custom/'
num_classes = 1
metainfo = dict(classes=('cell', ), palette=[(75, 230, 57)])
# The classes, the box heads' num_classes and the number of class priors are those of the
# prepared data (its annotations' categories, mmdet_pu/datasets/data_classes.py), so one
# config takes any classes; metainfo above holds until the data exists.
classes_from_data = True
prepare_cmd = ('python data_prep/prepare.py qupath --src <images + QuPath GeoJSON dir> '
               '--out data/custom')

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
