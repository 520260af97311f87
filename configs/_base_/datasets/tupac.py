# TUPAC16 auxiliary mitosis data, cases 01-23 (first centre), with the alternative
# labels of Bertram et al. as the complete set: mitoses, binary (Section 3.1.3,
# docs/method.md#datasets-and-deletion).
# Prepare: python data_prep/prepare.py tupac --src <TUPAC16 auxiliary dir> --out data/tupac
# Cases split 4:1:1 (fold0 only); 2000 x 2000 tiles cut into 500 x 500 patches without
# overlap, patches without mitoses dropped; 32 x 32 boxes. Each annotation carries
# `original` (also in the original, incomplete labels). Evaluated per patch (test.json).
_base_ = './_cell_coco.py'

data_root = 'data/tupac/'
num_classes = 1
metainfo = dict(classes=('mitosis', ), palette=[(220, 20, 60)])
prepare_cmd = ('python data_prep/prepare.py tupac --src <TUPAC16 auxiliary dir> '
               '--out data/tupac')

# the loaders of ./_cell_coco.py, pointed at this dataset
dataset_fields = dict(data_root=data_root, metainfo=metainfo, prepare_cmd=prepare_cmd)
train_dataloader = dict(dataset=dataset_fields)
val_dataloader = dict(dataset=dataset_fields)
test_dataloader = dict(dataset=dict(dataset_fields, ann_file='annotations/fold0/test.json'))

# Default IoU >= 0.5 matching; the challenge criterion (30 px from the centre) is
# --cfg-options test_evaluator.radius=30.
