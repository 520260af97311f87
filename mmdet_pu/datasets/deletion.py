"""Incomplete-annotation protocols: seeded deletion of annotations (Section 3.1).

A scheme decides, for one image (patch), which of its annotations stay. The choice is
drawn from a generator seeded with ``(seed, hash(image key))``, the key being the image's
COCO ``file_name``, so it is reproducible and independent of the dataset order, of the
other images and of the process. Complete annotations are ``deletion = None``.

Every scheme takes ``subset``: the name of a boolean annotation field restricting the
annotations that may be kept. TUPAC's protocol, "the original labels, then random
deletion until one per patch" (Section 3.1.3), is ``KeepPerPatch(k=1,
subset='original')`` on the complete (alternative) labels.

The same scheme gives the same result inside :class:`~mmdet_pu.datasets.CellCocoDataset`
(``deletion=...``) and in ``data_prep/delete.py`` (:func:`delete_from_coco`), as both
present it the annotations the dataset loads (:func:`is_loaded`) of an image in COCO
file order. A config names its scheme once,
in the top-level key ``deletion``; :func:`apply_deletion` gives it to the training and
validation loaders (docs/method.md#datasets-and-deletion).
"""
import copy
import hashlib
from collections import defaultdict

import numpy as np
from mmengine.registry import DefaultScope

from mmdet_pu.registry import DELETION_SCHEMES


class DeletionScheme:
    """Base class: seeded per-image choice of the annotations to keep.

    A subclass implements :meth:`choose` (which of the candidate annotations stay) and
    lists in :attr:`fields` the annotation fields it reads besides ``category_id``.

    Args:
        seed: seed shared by all images (combined with each image's key).
        subset: name of a boolean annotation field, or ``None``. When given, only the
            annotations where the field is true are candidates; the others are always
            deleted. TUPAC uses ``subset='original'`` to start from the original,
            incomplete labels (docs/method.md#datasets-and-deletion; the field is
            written by ``prepare.py tupac``).
    """

    #: Annotation fields :meth:`choose` reads, besides ``category_id``.
    fields = ()

    def __init__(self, seed=0, subset=None):
        if subset is not None and not (isinstance(subset, str) and subset):
            raise ValueError(f'{type(self).__name__}: subset must be an annotation field '
                             f'name or None, got {subset!r}')
        self.seed = int(seed)
        self.subset = subset

    def rng(self, key):
        """Generator for the image with key ``key`` (its ``file_name``)."""
        digest = hashlib.sha256(str(key).encode('utf-8')).digest()
        return np.random.default_rng([self.seed, int.from_bytes(digest[:8], 'little')])

    def keep(self, key, anns):
        """Sorted indices (into ``anns``) of the annotations of image ``key`` that stay.

        Args:
            key: image key (COCO ``file_name``); seeds the choice.
            anns: the image's COCO annotation dicts, in file order, with
                ``category_id``, the ``subset`` field and the scheme's :attr:`fields`.
                Ignored regions (``iscrowd``: e.g. CRCHistoPhenotypes' unclassified
                nuclei) are never drawn and always stay: they are neither cells nor
                background, whatever is deleted.
        """
        self._check_fields(key, anns)
        ignored = np.asarray([bool(ann.get('iscrowd', False)) for ann in anns], dtype=bool)
        candidates = np.flatnonzero(~ignored)
        if self.subset is not None:
            candidates = np.flatnonzero(~ignored & np.asarray(
                [bool(ann[self.subset]) for ann in anns], dtype=bool))
        chosen = self.choose(self.rng(key), [anns[i] for i in candidates])
        kept = candidates[np.asarray(chosen, dtype=np.int64)]
        return np.sort(np.concatenate([kept, np.flatnonzero(ignored)]))

    def choose(self, rng, anns):
        """Indices into ``anns`` (the candidates of one image) to keep, drawn with ``rng``."""
        raise NotImplementedError

    def _check_fields(self, key, anns):
        needed = ('category_id', *self.fields) + ((self.subset, ) if self.subset else ())
        for ann in anns:
            missing = [name for name in needed if name not in ann]
            if missing:
                raise ValueError(f'{self!r}: annotation {ann.get("id")} of image {key} has '
                                 f'no {", ".join(map(repr, missing))} field')

    def __repr__(self):
        args = ', '.join(f'{k}={v!r}' for k, v in vars(self).items())
        return f'{type(self).__name__}({args})'


def _top(rng, n, k, scores=None):
    """``k`` of ``n`` indices: at random, or the ``k`` highest scores (random ties)."""
    order = rng.permutation(n)
    if scores is not None:
        order = order[np.argsort(-np.asarray(scores, np.float64)[order], kind='stable')]
    return order[:k]


@DELETION_SCHEMES.register_module()
class KeepPerPatch(DeletionScheme):
    """Keep at most ``k`` annotations per image (patch), all classes together.

    ``order='random'``: a uniformly random subset (MITOS keep-1, CRCHisto keep-1/2/5;
    TUPAC keep-1 among the original labels with ``subset='original'``).
    ``order='score'``: the ``k`` annotations with the highest ``score`` (MITOS: the
    pathologists' agreement, "keep the most confident cell"), ties broken at random.
    """

    ORDERS = ('random', 'score')

    def __init__(self, k=1, order='random', seed=0, subset=None):
        super().__init__(seed, subset)
        if int(k) != k or k < 1:
            raise ValueError(f'KeepPerPatch: k must be a positive integer, got {k!r}')
        if order not in self.ORDERS:
            raise ValueError(f'KeepPerPatch: order must be one of {self.ORDERS}, '
                             f'got {order!r}')
        self.k = int(k)
        self.order = order

    @property
    def fields(self):
        return ('score', ) if self.order == 'score' else ()

    def choose(self, rng, anns):
        scores = [ann['score'] for ann in anns] if self.order == 'score' else None
        return _top(rng, len(anns), self.k, scores)


@DELETION_SCHEMES.register_module()
class CapPerClass(DeletionScheme):
    """Keep at most ``k`` annotations of each class per image, at random (NuCLS)."""

    def __init__(self, k=10, seed=0, subset=None):
        super().__init__(seed, subset)
        if int(k) != k or k < 1:
            raise ValueError(f'CapPerClass: k must be a positive integer, got {k!r}')
        self.k = int(k)

    def choose(self, rng, anns):
        labels = np.asarray([ann['category_id'] for ann in anns])
        chosen = [members[_top(rng, len(members), self.k)]
                  for members in (np.flatnonzero(labels == c) for c in np.unique(labels))]
        return np.concatenate(chosen) if chosen else np.zeros(0, np.int64)


@DELETION_SCHEMES.register_module()
class KeepRegion(DeletionScheme):
    """Keep every annotation inside one square area per image (patch) and none outside:
    regional annotation, where a pathologist marks all cells of a small field.

    The area is ``size`` x ``size`` pixels centred on the box centre of one annotation
    drawn at random (so a patch with cells always has an annotated area); an annotation
    stays when its box centre lies inside it.
    """

    fields = ('bbox', )

    def __init__(self, size=96, seed=0, subset=None):
        super().__init__(seed, subset)
        if not size > 0:
            raise ValueError(f'KeepRegion: size must be positive, got {size!r}')
        self.size = float(size)

    def choose(self, rng, anns):
        if not anns:
            return np.zeros(0, np.int64)
        boxes = np.asarray([ann['bbox'] for ann in anns], dtype=np.float64).reshape(-1, 4)
        centres = boxes[:, :2] + boxes[:, 2:] / 2
        anchor = centres[rng.integers(len(anns))]
        inside = np.all(np.abs(centres - anchor) <= self.size / 2, axis=1)
        return np.flatnonzero(inside)


def build_deletion(cfg):
    """A scheme from a ``DELETION_SCHEMES`` config dict; ``None`` (complete) stays None."""
    if cfg is None or isinstance(cfg, DeletionScheme):
        return cfg
    # Build in the registry's own scope: configs run under default_scope='mmdet', whose
    # registry tree does not hold DELETION_SCHEMES.
    with DefaultScope.overwrite_default_scope(DELETION_SCHEMES.scope):
        return DELETION_SCHEMES.build(cfg)


#: The loaders whose labels a config's ``deletion`` makes incomplete (test stays complete).
DELETED_LOADERS = ('train_dataloader', 'val_dataloader')


def _cell_datasets(node, key):
    """``(dotted key, dataset dict)`` of every CellCocoDataset in a loader's dataset,
    wrapped datasets (``dataset``, ``datasets``) included."""
    if isinstance(node, (list, tuple)):
        for i, child in enumerate(node):
            yield from _cell_datasets(child, f'{key}.{i}')
    elif isinstance(node, dict):
        if str(node.get('type', '')).split('.')[-1] == 'CellCocoDataset':
            yield key, node
        for name in ('dataset', 'datasets'):
            if node.get(name, None):
                yield from _cell_datasets(node[name], f'{key}.{name}')


def apply_deletion(cfg):
    """A copy of ``cfg`` whose training and validation cell datasets get the top-level
    ``deletion`` (a ``DELETION_SCHEMES`` config, or None for complete labels).

    A config without the key is returned unchanged (its loaders keep what they set).

    Raises:
        ValueError: a loader's dataset sets a different ``deletion`` of its own,
            None included (set it once, at the top level), or no training cell
            dataset receives the scheme.
    """
    if 'deletion' not in cfg:
        return cfg
    cfg = copy.deepcopy(cfg)
    scheme = cfg['deletion']
    found = []
    for loader in DELETED_LOADERS:
        if not cfg.get(loader, None):
            continue
        for key, dataset in _cell_datasets(cfg[loader].get('dataset', None),
                                           f'{loader}.dataset'):
            # a loader's own None (complete labels) is a setting too, not an absence
            own = dataset.get('deletion', None)
            if 'deletion' in dataset and own != scheme:
                raise ValueError(
                    f'{key}.deletion is set to {own!r}, but the config sets the scheme in '
                    f'its top-level key deletion={scheme!r}; set it once, there '
                    '(--cfg-options deletion.k=... or deletion=None)')
            dataset['deletion'] = copy.deepcopy(scheme)
            found.append(key)
    if scheme is not None and not any(k.startswith('train_dataloader') for k in found):
        raise ValueError(f'deletion={scheme!r}: the config has no CellCocoDataset in '
                         'train_dataloader to apply it to')
    return cfg


def is_loaded(ann, width, height, cat_ids) -> bool:
    """Whether :class:`~mmdet_pu.datasets.CellCocoDataset` (CocoDataset's rules) makes
    COCO annotation ``ann`` of a ``width`` x ``height`` image an instance: not ignored,
    a box of >= 1 px with some part inside the image, a category in ``cat_ids``. A
    scheme draws among these only."""
    x1, y1, w, h = ann['bbox']
    inside_w = min(x1 + w, width) - max(x1, 0)
    inside_h = min(y1 + h, height) - max(y1, 0)
    return (not ann.get('ignore', False) and inside_w > 0 and inside_h > 0
            and ann['area'] > 0 and w >= 1 and h >= 1 and ann['category_id'] in cat_ids)


def delete_from_coco(coco, scheme, classes=None):
    """A copy of COCO dict ``coco`` without the annotations ``scheme`` deletes.

    As in :class:`~mmdet_pu.datasets.CellCocoDataset`, the scheme draws among the
    annotations the dataset loads (:func:`is_loaded`) for ``classes`` (category names;
    default every category of the file); the others stay in the file unchanged (the
    dataset skips them). Images and categories are unchanged (an image may be left with
    no annotation: it is still unlabeled data). ``scheme`` is a
    :class:`DeletionScheme`, a config dict or ``None`` (nothing deleted).
    """
    scheme = build_deletion(scheme)
    if scheme is None:
        return copy.deepcopy(coco)
    images = {img['id']: img for img in coco['images']}
    cat_ids = {cat['id'] for cat in coco['categories']
               if classes is None or cat['name'] in classes}
    per_image = defaultdict(list)
    for ann in coco['annotations']:
        if ann['image_id'] not in images:
            raise ValueError(f"annotation {ann.get('id')} refers to image_id "
                             f"{ann['image_id']}, which is not in 'images'")
        per_image[ann['image_id']].append(ann)
    kept_ids = set()
    for image_id, anns in per_image.items():
        image = images[image_id]
        loaded = [ann for ann in anns
                  if is_loaded(ann, image['width'], image['height'], cat_ids)]
        skipped = {id(ann) for ann in anns} - {id(ann) for ann in loaded}
        kept_ids.update(skipped)
        kept_ids.update(id(loaded[i]) for i in scheme.keep(image['file_name'], loaded))
    kept = [ann for ann in coco['annotations'] if id(ann) in kept_ids]
    return copy.deepcopy(dict(coco, annotations=kept))
