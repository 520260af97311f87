# NuCLS corrected single-rater set: tumor / lymphocyte / stromal nuclei, multi-class
# (Section 3.1.4, docs/method.md#datasets-and-deletion).
# Prepare: python data_prep/prepare.py nucls --src <NuCLS dir with rgb/ and csv/> \
#              --out data/nucls
# FOVs (~250-400 px) split 4:1:1 by slide (fold0 only), kept whole (no tiling); the
# given boxes, classes by super_classification. Evaluated per image (test.json).
_base_ = './_cell_coco.py'

data_root = 'data/nucls/'
num_classes = 3
metainfo = dict(
    classes=('tumor', 'lymphocyte', 'stromal'),
    palette=[(220, 20, 60), (0, 0, 230), (0, 160, 0)])
prepare_cmd = ('python data_prep/prepare.py nucls --src <NuCLS dir> '
               '--out data/nucls')

# the loaders of ./_cell_coco.py, pointed at this dataset
dataset_fields = dict(data_root=data_root, metainfo=metainfo, prepare_cmd=prepare_cmd)
train_dataloader = dict(dataset=dataset_fields)
val_dataloader = dict(dataset=dataset_fields)
test_dataloader = dict(dataset=dict(dataset_fields, ann_file='annotations/fold0/test.json'))
