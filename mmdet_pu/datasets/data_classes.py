"""The classes of a config taken from its prepared data (``classes_from_data = True``).

The own-data configs (``configs/custom/``) do not know the user's classes: one config
serves a binary set of nuclei, a QuPath export with ``--classes tumor,lymphocyte`` and a
label-image set with ``--type-masks ... --class-names ...``. With the top-level key
``classes_from_data = True``, :func:`apply_data_classes` reads the categories of the
training loader's annotation file (written by ``data_prep/prepare.py``) and sets

* ``metainfo.classes`` (and a palette) of the train, val and test datasets, in the
  file's order (:class:`~mmdet_pu.datasets.CellCocoDataset` requires that order);
* ``num_classes`` of the box heads (the RoI head's, each cascade stage's, or a dense
  head's);
* the class priors of a :class:`~mmdet_pu.models.losses.MultiPULoss` whose number differs
  from the classes': their total spread evenly (the start that ``tools/fit_prior.py``
  fits);
* the detections kept per patch (``max_per_img`` of the test config, the RoI head's or a
  dense head's): the config's value, written for one class, times the number of classes,
  as the shipped multi-class configs have it.

A binary :class:`~mmdet_pu.models.losses.PULoss` in the box head of a set with several
classes is an error that names the multi-class config. Without the annotation file the
config is left as written (the dataset then names the command that prepares it). Once
applied, the config says ``classes_from_data = False``: the classes are in it, so the
runner that a command line builds from it (and a config dumped from it) reads the
annotation file no second time.
"""
import json
import os.path as osp

#: Colours of the classes, in order (RGB), repeated for more classes.
PALETTE = ((220, 20, 60), (0, 0, 230), (0, 160, 0), (230, 160, 0), (160, 0, 200),
           (0, 180, 200), (120, 80, 40), (255, 120, 180))
LOADERS = ('train_dataloader', 'val_dataloader', 'test_dataloader')


def read_categories(ann_file):
    """Category names of a COCO file in id order; ``None`` when it does not exist.

    Raises:
        ValueError: naming the file when it is not a COCO file with named categories.
    """
    if not osp.isfile(ann_file):
        return None
    with open(ann_file) as f:
        try:
            categories = json.load(f).get('categories')
        except (json.JSONDecodeError, AttributeError) as err:
            raise ValueError(f'{ann_file}: not a COCO annotation file ({err})') from err
    if not categories or not all('name' in c and 'id' in c for c in categories):
        raise ValueError(f'{ann_file}: expected "categories" with "id" and "name", the '
                         'file data_prep/prepare.py writes')
    return [c['name'] for c in sorted(categories, key=lambda c: c['id'])]


def _box_heads(model):
    """The box head configs of a model config: the RoI head's (each cascade stage's) or
    the dense head's."""
    if 'roi_head' in model:
        heads = model.roi_head.bbox_head
        return list(heads) if isinstance(heads, (list, tuple)) else [heads]
    return [model.bbox_head] if 'bbox_head' in model else []


def _fit_head(head, classes):
    """Set ``num_classes`` of one box head and the number of its loss's priors."""
    head.num_classes = len(classes)
    loss = head.get('loss_cls', {})
    if loss.get('type') == 'PULoss' and len(classes) > 1:
        raise ValueError(f'the prepared data has {len(classes)} classes '
                         f'({", ".join(classes)}) but the config trains one with a binary '
                         'PULoss; start from configs/custom/custom_mpu.py')
    priors = loss.get('priors')
    if loss.get('type') == 'MultiPULoss' and priors is not None \
            and len(priors) != len(classes):
        loss.priors = [sum(priors) / len(classes)] * len(classes)


def _scale_detection_cap(model, num_classes):
    """Multiply the test config's ``max_per_img`` (the box head's) by ``num_classes``."""
    test_cfg = model.get('test_cfg') or {}
    final = test_cfg.get('rcnn', test_cfg)
    if final.get('max_per_img') is not None:
        final.max_per_img *= num_classes


def apply_data_classes(cfg):
    """``cfg`` with the classes of its prepared data when ``classes_from_data`` is set
    (see the module docstring); unchanged otherwise. Modifies and returns ``cfg``."""
    if not cfg.get('classes_from_data', False):
        return cfg
    train = cfg.train_dataloader.dataset
    classes = read_categories(osp.join(train.get('data_root', ''), train.ann_file))
    if classes is None:
        return cfg
    metainfo = dict(classes=tuple(classes),
                    palette=[PALETTE[i % len(PALETTE)] for i in range(len(classes))])
    for loader in LOADERS:
        if loader in cfg and cfg[loader] is not None:
            cfg[loader].dataset.metainfo = dict(metainfo)
    if 'metainfo' in cfg:
        cfg.metainfo = dict(metainfo)
    for head in _box_heads(cfg.model):
        _fit_head(head, classes)
    _scale_detection_cap(cfg.model, len(classes))
    cfg.classes_from_data = False  # now written out: the runner need not read them again
    return cfg
