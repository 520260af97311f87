# mnfinder's real fluorescence nuclei (docs/datasets.md, "mnfinder"): 49 images, 3,203
# instance-annotated nuclei of 20-50 px, binary (nucleus).
# Prepare: python data_prep/prepare.py mnfinder --src <unzipped mnfinder-1.2.3 wheel>
#              --out data/mnfinder
# Three folds, each holding out whole sets (fold0: U2OS widefield 20x; fold1: the mixed
# 40x set; fold2: RPE-1), validated on mnfinder's validation images of the sets it
# trains on; 256 px training/validation tiles; test images evaluated whole by tiled
# inference. Other folds: tools/repeat.py --folds 0 1 2, or replace fold0 in the three
# ann_file paths.
_base_ = './_cell_coco.py'

data_root = 'data/mnfinder/'
num_classes = 1
metainfo = dict(classes=('nucleus', ), palette=[(0, 160, 255)])
prepare_cmd = ('python data_prep/prepare.py mnfinder --src <unzipped mnfinder-1.2.3 '
               'wheel> --out data/mnfinder')

# the loaders of ./_cell_coco.py, pointed at this dataset
dataset_fields = dict(data_root=data_root, metainfo=metainfo, prepare_cmd=prepare_cmd)
train_dataloader = dict(
    batch_size=4,
    dataset=dict(dataset_fields, pipeline=_base_.all_flips_train_pipeline))
val_dataloader = dict(dataset=dataset_fields)
test_dataloader = dict(dataset=dataset_fields)
# Overlapping tiles, each keeping the cells centred in its core (TiledTestLoop).
test_cfg = dict(type='TiledTestLoop', tile_size=256, overlap=64, nms_iou=0.3)
