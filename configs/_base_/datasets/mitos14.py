# MITOS-ATYPIA-14, Aperio x40 frames: mitoses, binary (Section 3.1.1,
# docs/method.md#datasets-and-deletion).
# Prepare: python data_prep/prepare.py mitos14 --src <MITOS-ATYPIA-14 dir> --out data/mitos14
# 11 slides split 4:1:1 by slide, 5 folds (fold0..fold4) sharing one val set; frames cut
# into 500 x 500 tiles overlapping by 100 px; 32 x 32 boxes around the points, each
# annotation with its pathologist agreement `score` (keep1_agreement deletion). Other
# folds: replace fold0 in the three ann_file paths. Test frames are evaluated whole by
# tiled inference (TiledTestLoop, same 500/100 tiling).
_base_ = './_cell_coco.py'

data_root = 'data/mitos14/'
num_classes = 1
metainfo = dict(classes=('mitosis', ), palette=[(220, 20, 60)])
prepare_cmd = ('python data_prep/prepare.py mitos14 --src <MITOS-ATYPIA-14 dir> '
               '--out data/mitos14')

# the loaders of ./_cell_coco.py, pointed at this dataset
dataset_fields = dict(data_root=data_root, metainfo=metainfo, prepare_cmd=prepare_cmd)
train_dataloader = dict(dataset=dataset_fields)
val_dataloader = dict(dataset=dataset_fields)
test_dataloader = dict(dataset=dataset_fields)

# Default IoU >= 0.5 matching; the challenge criterion (8 um = 32 px from the centre)
# is --cfg-options test_evaluator.radius=32.
test_cfg = dict(type='TiledTestLoop', tile_size=500, overlap=100, nms_iou=0.3)
