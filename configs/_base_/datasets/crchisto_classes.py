# CRCHistoPhenotypes nuclei with their classes: epithelial / fibroblast / inflammatory /
# others (docs/datasets.md#crchistophenotypes-crchisto). Nuclei without a class are
# ignored regions (iscrowd): neither cells nor background in training (with the
# assigners' ignore_iof_thr > 0, set by the experiment configs), don't-care in the
# evaluation (docs/method.md#unclassified-nuclei).
# Prepare: python data_prep/prepare.py crchisto --classes --src <CRCHistoPhenotypes dir> \
#              --out data/crchisto_classes
# The binary dataset's split, tiling and evaluation (./crchisto.py).
_base_ = './crchisto.py'

data_root = 'data/crchisto_classes/'
num_classes = 4
metainfo = dict(
    classes=('epithelial', 'fibroblast', 'inflammatory', 'others'),
    palette=[(220, 20, 60), (0, 160, 0), (0, 0, 230), (230, 160, 0)])
prepare_cmd = ('python data_prep/prepare.py crchisto --classes --src '
               '<CRCHistoPhenotypes dir> --out data/crchisto_classes')
dataset_fields = dict(data_root=data_root, metainfo=metainfo, prepare_cmd=prepare_cmd)
train_dataloader = dict(dataset=dataset_fields)
val_dataloader = dict(dataset=dataset_fields)
test_dataloader = dict(dataset=dataset_fields)
