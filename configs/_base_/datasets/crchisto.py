# CRCHistoPhenotypes detection set: nuclei, binary (Section 3.1.2,
# docs/method.md#datasets-and-deletion).
# Prepare: python data_prep/prepare.py crchisto --src <CRCHistoPhenotypes_2016_04_28 dir> \
#              --out data/crchisto
# 100 images of 500 x 500 split 4:1:1 by image, 5 folds (fold0..fold4) sharing one val
# set; 250 x 250 tiles overlapping by 50 px; 12 x 12 boxes around the points. Other
# folds: replace fold0 in the three ann_file paths. Test images are evaluated whole by
# tiled inference (TiledTestLoop, same 250/50 tiling).
_base_ = './_cell_coco.py'

data_root = 'data/crchisto/'
num_classes = 1
metainfo = dict(classes=('nucleus', ), palette=[(220, 20, 60)])
prepare_cmd = ('python data_prep/prepare.py crchisto --src <CRCHistoPhenotypes_2016_04_28 dir> '
               '--out data/crchisto')

# the loaders of ./_cell_coco.py, pointed at this dataset
dataset_fields = dict(data_root=data_root, metainfo=metainfo, prepare_cmd=prepare_cmd)
train_dataloader = dict(dataset=dataset_fields)
val_dataloader = dict(dataset=dataset_fields)
test_dataloader = dict(dataset=dataset_fields)
test_cfg = dict(type='TiledTestLoop', tile_size=250, overlap=50, nms_iou=0.3)
