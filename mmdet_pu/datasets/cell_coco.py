"""COCO-style cell dataset written by ``data_prep/prepare.py``, with seeded deletion."""
import json
import logging
import math
import os.path as osp
import statistics

from mmengine.logging import print_log

from mmdet.datasets import CocoDataset
from mmdet.datasets.api_wrappers import COCO
from mmdet.registry import DATASETS

from .deletion import build_deletion, is_loaded
from .transforms import PackCellInputs

#: Annotation fields that CocoDataset parses into ``bbox``, ``bbox_label`` and
#: ``ignore_flag``; every other field (``point``, ``score``, ``original``, ...) is kept
#: on the instance as it is.
COCO_ANNOTATION_KEYS = ('id', 'image_id', 'category_id', 'bbox', 'area', 'iscrowd',
                        'ignore', 'segmentation')
#: Dataset names of data_prep/prepare.py, to suggest the command for a missing file.
PREPARED_DATASETS = ('mitos14', 'crchisto', 'tupac', 'nucls', 'synthetic')
#: Relative spread of the images' ``mpp`` beyond which the dataset warns that one
#: training resolution does not describe them.
MPP_SPREAD = 0.05


#: The lists of a pseudo-label file, each ``{file_name: [[x1, y1, x2, y2, label], ...]}``,
#: and the ``ignore_flag`` of their instances: cells to learn (``images``) and detections
#: to ignore (``uncertain``, optional).
PSEUDO_LABEL_LISTS = dict(images=0, uncertain=1)
#: The label of a pseudo-labeled cell whose class is unknown (e.g. a single-class
#: detector's cell in a multi-class training), in the file.
UNKNOWN_CLASS = -1


def unknown_class_label(num_classes: int) -> int:
    """The training label of a cell whose class is unknown: ``num_classes + 1`` (mmdet
    numbers the classes ``0 .. C - 1`` and gives the background ``C``; a loss that
    takes it: :class:`~mmdet_pu.models.losses.UnknownClassCELoss`), or class 0 when
    there is one class, whose every cell is of it."""
    return 0 if num_classes == 1 else num_classes + 1


#: The pseudo-label file's teacher scores, ``{file_name: [score, ...]}``, one per cell of
#: its ``images`` list in that order (what ``pseudo_label_weights`` weighs them by).
PSEUDO_LABEL_SCORES = 'scores'


def read_pseudo_labels(path, num_classes, with_scores=False):
    """``{list: {file_name: [[x1, y1, x2, y2, label], ...]}}`` for each of
    :data:`PSEUDO_LABEL_LISTS` of a pseudo-label file (empty ones for None and for an
    absent ``uncertain``): the coordinates numbers, each label a class index in
    ``[0, num_classes)``. ``with_scores``: also :data:`PSEUDO_LABEL_SCORES`, each a
    score in ``(0, 1]``, one per cell of ``images``.

    Raises:
        ValueError: naming the file, and the list, image and entry that are not such a
            list (or, ``with_scores``, no such score).
    """
    if path is None:
        return {key: {} for key in (*PSEUDO_LABEL_LISTS, PSEUDO_LABEL_SCORES)}
    with open(path) as f:
        try:
            content = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f'{path}: not valid JSON ({e}); expected a pseudo-label '
                             'file') from e
    images = content.get('images') if isinstance(content, dict) else None
    if not isinstance(images, dict):
        raise ValueError(f'{path}: expected {{"images": {{file_name: [[x1, y1, x2, y2, '
                         f'label], ...]}}}}, got a JSON {type(content).__name__} without '
                         'such an "images" object')
    lists = {key: content.get(key, {}) for key in PSEUDO_LABEL_LISTS}
    for key, cells_of in lists.items():
        if not isinstance(cells_of, dict):
            raise ValueError(f'{path}: "{key}": expected {{file_name: [[x1, y1, x2, y2, '
                             f'label], ...]}}, got a JSON {type(cells_of).__name__}')
        for name, cells in cells_of.items():
            if not isinstance(cells, list):
                raise ValueError(f'{path}: {key}[{name!r}]: expected a list of [x1, y1, '
                                 f'x2, y2, label], got {cells!r}')
            for i, cell in enumerate(cells):
                _check_pseudo_cell(cell, num_classes, f'{path}: {key}[{name!r}][{i}]')
    if with_scores:
        lists[PSEUDO_LABEL_SCORES] = _read_scores(path, content, lists['images'])
    return lists


def _read_scores(path, content, images):
    """The file's :data:`PSEUDO_LABEL_SCORES`, checked against its ``images`` list."""
    key = PSEUDO_LABEL_SCORES
    scores = content.get(key)
    if not isinstance(scores, dict):
        raise ValueError(f'{path}: expected a "{key}" object {{file_name: [score, ...]}} '
                         'beside "images" (pseudo_label_weights weighs each cell by its '
                         'score); write the file with the workflow of this version')
    for name, cells in images.items():
        values = scores.get(name)
        if not (isinstance(values, list) and len(values) == len(cells)
                and all(_is_number(v) and 0 < v <= 1 for v in values)):
            raise ValueError(f'{path}: {key}[{name!r}]: expected {len(cells)} scores in '
                             f'(0, 1], one per cell of images[{name!r}], got {values!r}')
    return scores


def _is_number(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _check_pseudo_cell(cell, num_classes, where):
    """Raise a ValueError naming ``where`` unless ``cell`` is ``[x1, y1, x2, y2, label]``
    of finite numbers with ``x1 < x2``, ``y1 < y2`` and an integer ``label`` in
    ``[0, num_classes)`` or :data:`UNKNOWN_CLASS`."""
    if not (isinstance(cell, list) and len(cell) == 5 and all(map(_is_number, cell[:4]))):
        raise ValueError(f'{where}: expected [x1, y1, x2, y2, label] with numeric '
                         f'coordinates, got {cell!r}')
    if not (cell[0] < cell[2] and cell[1] < cell[3]):
        raise ValueError(f'{where}: expected a box with x1 < x2 and y1 < y2, got {cell!r}')
    _check_label(cell[4], num_classes, where)


def _check_label(label, num_classes, where):
    """Raise a ValueError naming ``where`` unless ``label`` is a class index in
    ``[0, num_classes)`` or :data:`UNKNOWN_CLASS`."""
    if isinstance(label, bool) or not isinstance(label, int) \
            or not (0 <= label < num_classes or label == UNKNOWN_CLASS):
        raise ValueError(f'{where}: expected the label to be a class index in '
                         f'0..{num_classes - 1} ({num_classes} classes in the dataset\'s '
                         f'metainfo) or {UNKNOWN_CLASS} for a cell of unknown class, got '
                         f'{label!r}')


@DATASETS.register_module()
class CellCocoDataset(CocoDataset):
    """Cell detection dataset in the layout of docs/design.md.

    On top of :class:`mmdet.datasets.CocoDataset`:

    * ``deletion``: a ``DELETION_SCHEMES`` config (e.g. ``dict(type='KeepPerPatch',
      k=1)``) applied to each image's annotations when they are loaded, to simulate
      incomplete annotations on the train/val sets (Section 3.1). ``None`` keeps the
      complete annotations (upper bound, test sets). The choice is seeded per image
      (see :mod:`mmdet_pu.datasets.deletion`) and equals ``data_prep/delete.py``'s.
    * Images whose annotations were all deleted are kept whatever ``filter_cfg`` says:
      in PU learning an image without labels is still unlabeled data.
      ``filter_cfg=dict(filter_empty_gt=True)`` only drops images that have no cell in
      the (complete) annotation file.
    * Each data_info carries ``source``, ``x0``, ``y0`` (tile offset in the source image)
      and ``tiles`` (the tile grid of a whole test image; one tile covering the image
      otherwise) and ``file_name``; each instance keeps the annotation's own fields
      (``point``, ``score``, TUPAC's ``original``, ...).
    * ``pseudo_labels``: a JSON file of further cells per image (the self-training of
      ``tools/fit_prior.py``, :mod:`mmdet_pu.workflow.pseudo_labels`), added after the
      deletion as instances with ``pseudo=True``: ``{"images": {file_name: [[x1, y1,
      x2, y2, label], ...]}}`` (boxes in the image's pixels, labels 0-based class
      indices, or :data:`UNKNOWN_CLASS` for a cell of unknown class, which trains as
      :func:`unknown_class_label`; checked when the dataset loads,
      :func:`read_pseudo_labels`). Its optional
      ``"uncertain"`` list, the same way, holds detections the training neither learns
      as cells nor as background: instances with ``ignore_flag=1`` (mmdet's ignored
      instances, which an assigner with ``ignore_iof_thr > 0`` leaves out of the
      samples). ``pseudo_label_class`` gives every pseudo-label that class in place of
      the file's: e.g. :data:`UNKNOWN_CLASS` to teach a single-class detector's cells to
      a multi-class training (docs/method.md#cells-of-unknown-class).
    * ``metainfo['classes']`` must be the file's categories in the file's order:
      CocoDataset numbers the labels in that order, so a config listing them otherwise
      would name every label wrongly; a ValueError names the file and both orders.
    * A missing ``ann_file`` raises an error naming the ``data_prep/prepare.py`` command
      that writes it: ``prepare_cmd`` if given, else one derived from ``data_root``.
    * ``metainfo['mpp']``: the training resolution in micrometres per pixel, the median
      of the image entries' ``mpp`` (written by the converters and the QuPath import),
      unless the config's ``metainfo`` sets ``mpp``; absent when neither gives one. The
      runner stores the metainfo in every checkpoint (``meta.dataset_meta``), where
      whole-slide inference reads it (docs/slides.md). A warning names the file when
      some images lack a resolution or when they differ by more than
      :data:`MPP_SPREAD`.
    * ``metainfo['scale']``: the median of the image entries' ``scale``, the factor the
      converter resampled them by from their sources (``prepare.py masks|qupath
      --scale``), unless the config's ``metainfo`` sets it; absent when no image was
      resampled. Whole-slide inference resamples a slide by it where the resolutions
      are unknown.

    Args:
        deletion (dict | None): deletion scheme config.
        prepare_cmd (str | None): command that prepares this dataset (for the error).
        pseudo_labels (str | None): JSON file of pseudo-labeled cells.
        pseudo_label_class (int | None): The class of every pseudo-label (a class
            index or :data:`UNKNOWN_CLASS`); None: each cell's class in the file.
        pseudo_label_weights (bool): Each pseudo-labeled cell carries its score in the
            file (:data:`PSEUDO_LABEL_SCORES`) as its ``weight``, the labeled cells none
            (weight 1): the soft targets of score-weighted distillation
            (docs/method.md#distilled-detector). Needs ``PackCellInputs`` in the
            pipeline, which packs the weights.
    """

    def __init__(self, *args, deletion=None, prepare_cmd=None, pseudo_labels=None,
                 pseudo_label_class=None, pseudo_label_weights=False, **kwargs):
        self.deletion = build_deletion(deletion)
        self.prepare_cmd = prepare_cmd
        self.pseudo_label_file = pseudo_labels
        self.pseudo_label_class = pseudo_label_class
        self.pseudo_label_weights = bool(pseudo_label_weights)
        super().__init__(*args, **kwargs)
        if self.pseudo_label_weights and not any(
                isinstance(t, PackCellInputs) for t in self.pipeline.transforms):
            raise ValueError('pseudo_label_weights=True: the pipeline must pack the '
                             "cells' weights with dict(type='PackCellInputs'), got "
                             f'{[type(t).__name__ for t in self.pipeline.transforms]}')

    def _open_annotations(self, path):
        """CocoDataset's ``COCOAPI``: the COCO index of the annotation file; keeps the
        names of the file's categories, in the file's order, for :meth:`_check_classes`."""
        coco = COCO(path)
        self._file_classes = [cat['name'] for cat in coco.dataset.get('categories', [])]
        return coco

    COCOAPI = _open_annotations

    def _missing_file_help(self):
        if self.prepare_cmd:
            return self.prepare_cmd
        root = self.data_root or osp.dirname(osp.dirname(osp.dirname(self.ann_file)))
        name = osp.basename(osp.normpath(root)) if root else ''
        dataset = next((d for d in PREPARED_DATASETS if name.startswith(d)), '<dataset>')
        src = '' if dataset == 'synthetic' else ' --src <raw dataset dir>'
        return f'python data_prep/prepare.py {dataset}{src} --out {root or "<data_root>"}'

    def load_data_list(self):
        if not osp.isfile(self.ann_file):
            raise FileNotFoundError(
                f'annotation file {self.ann_file} does not exist. Prepare the dataset '
                f'first:\n    {self._missing_file_help()}')
        self._annotated_img_ids = set()  # filled by parse_data_info, before deletion
        self._image_mpps = []  # filled by parse_data_info: each image's mpp or None
        self._image_scales = []  # filled by parse_data_info: each image's scale or None
        num_classes = len(self.metainfo['classes'])
        if self.pseudo_label_class is not None:
            _check_label(self.pseudo_label_class, num_classes, 'pseudo_label_class')
        self.pseudo_labels = read_pseudo_labels(self.pseudo_label_file, num_classes,
                                                with_scores=self.pseudo_label_weights)
        data_list = super().load_data_list()
        self._check_classes()
        self._check_pseudo_images(data_list)
        if 'mpp' not in self._metainfo:  # the config's metainfo wins
            mpp = self._training_mpp(self._image_mpps)
            if mpp is not None:
                self._metainfo['mpp'] = mpp
        scales = [float(v) for v in self._image_scales if v is not None]
        if 'scale' not in self._metainfo and scales:
            self._metainfo['scale'] = statistics.median(scales)
        return data_list

    def _training_mpp(self, values):
        """The median of the images' micrometres per pixel (None when no image has one)."""
        known = [float(v) for v in values if v is not None]
        if not known:
            return None
        mpp = statistics.median(known)
        if len(known) < len(values):
            print_log(f'{self.ann_file}: {len(values) - len(known)} of {len(values)} '
                      f'images have no mpp (micrometres per pixel); the training '
                      f'resolution is the median of the others, {mpp:g}', logger='current',
                      level=logging.WARNING)
        if max(known) - min(known) > MPP_SPREAD * mpp:
            print_log(f'{self.ann_file}: the images\' mpp range from {min(known):g} to '
                      f'{max(known):g} micrometres per pixel; the training resolution is '
                      f'their median, {mpp:g} (set metainfo.mpp in the config to choose)',
                      logger='current', level=logging.WARNING)
        return mpp

    def _check_classes(self):
        """The configured classes must be the file's categories in the file's order.

        CocoDataset drops the annotations of a class that is not a category of the file
        without a word (e.g. a QuPath import whose classes differ from the config's
        ``metainfo``), and it numbers the labels in the order of the file's
        ``categories``, not of ``metainfo.classes``: with categories ``[tumor,
        lymphocyte]`` and ``classes=('lymphocyte', 'tumor')`` a tumor would get label 0,
        which every consumer names ``lymphocyte``.
        """
        classes = tuple(self.metainfo['classes'])
        if len(self.cat_ids) < len(classes):
            raise ValueError(
                f'{self.ann_file}: only {len(self.cat_ids)} of the config\'s classes '
                f'{classes} are categories of this file (its "categories" list the '
                'classes it was prepared with); set metainfo.classes and the model\'s '
                'num_classes to those')
        in_file_order = tuple(name for name in self._file_classes if name in classes)
        if in_file_order != classes:
            raise ValueError(
                f'{self.ann_file}: its categories are {tuple(self._file_classes)} in this '
                f'order, the config\'s metainfo.classes {classes}; CocoDataset numbers '
                'the labels in the file\'s order, so the labels would be named wrongly: '
                f'set metainfo.classes to {in_file_order} (and anything given per class, '
                'e.g. priors, in that order)')

    def parse_data_info(self, raw_data_info):
        """Parse one image like CocoDataset, keep cell fields, apply the deletion."""
        img_info = raw_data_info['raw_img_info']
        width, height = img_info['width'], img_info['height']
        self._image_mpps.append(img_info.get('mpp'))
        self._image_scales.append(img_info.get('scale'))
        data_info = dict(
            img_path=osp.join(self.data_prefix['img'], img_info['file_name']),
            img_id=img_info['img_id'], seg_map_path=None, height=height, width=width,
            file_name=img_info['file_name'],
            source=img_info.get('source', img_info['file_name']),
            x0=img_info.get('x0', 0), y0=img_info.get('y0', 0),
            tiles=img_info.get('tiles', [[0, 0, width, height]]))
        anns = [ann for ann in raw_data_info['raw_ann_info']
                if is_loaded(ann, width, height, self.cat_ids)]
        if anns:
            self._annotated_img_ids.add(img_info['img_id'])
        if self.deletion is not None and anns:
            anns = [anns[i] for i in self.deletion.keep(img_info['file_name'], anns)]
        data_info['instances'] = [self._instance(ann) for ann in anns]
        data_info['instances'] += self._pseudo_instances(img_info['file_name'], width,
                                                         height)
        return data_info

    def _check_pseudo_images(self, data_list):
        """ValueError naming the pseudo-label file if it names images that the
        annotation file does not hold (its keys are the images' ``file_name``)."""
        named = set().union(*self.pseudo_labels.values())
        unknown = named - {info['file_name'] for info in data_list}
        if unknown:
            raise ValueError(
                f'{self.pseudo_label_file}: {len(unknown)} image(s) not in '
                f'{self.ann_file}, e.g. {sorted(unknown)[:3]}; expected the file_name of '
                'that file\'s images')

    def _pseudo_instances(self, name, width, height):
        """The pseudo-labeled cells of image ``name`` as instances, then its uncertain
        detections as ignored ones; ValueError naming the file and the entry for a box
        outside the ``width`` x ``height`` image."""
        instances = []
        for key, ignore in PSEUDO_LABEL_LISTS.items():
            for i, (*bbox, label) in enumerate(self.pseudo_labels[key].get(name, ())):
                x1, y1, x2, y2 = bbox
                if x2 <= 0 or y2 <= 0 or x1 >= width or y1 >= height:
                    raise ValueError(f'{self.pseudo_label_file}: {key}[{name!r}][{i}]: box '
                                     f'{bbox} lies outside the {width}x{height} image')
                if self.pseudo_label_class is not None:
                    label = self.pseudo_label_class
                if label == UNKNOWN_CLASS:
                    label = unknown_class_label(len(self.metainfo['classes']))
                instance = dict(bbox=list(bbox), bbox_label=int(label),
                                ignore_flag=ignore, pseudo=True)
                if self.pseudo_label_weights and not ignore:
                    instance['weight'] = float(self.pseudo_labels[PSEUDO_LABEL_SCORES][name][i])
                instances.append(instance)
        return instances

    def _instance(self, ann):
        x1, y1, w, h = ann['bbox']
        instance = {key: value for key, value in ann.items()
                    if key not in COCO_ANNOTATION_KEYS}
        instance.update(bbox=[x1, y1, x1 + w, y1 + h],
                        bbox_label=self.cat2label[ann['category_id']],
                        ignore_flag=int(bool(ann.get('iscrowd', False))))
        return instance

    def filter_data(self):
        """Apply ``filter_cfg``; images emptied by the deletion are always kept."""
        if self.test_mode or self.filter_cfg is None:
            return self.data_list
        filter_empty_gt = self.filter_cfg.get('filter_empty_gt', False)
        min_size = self.filter_cfg.get('min_size', 0)
        return [info for info in self.data_list
                if min(info['width'], info['height']) >= min_size
                and not (filter_empty_gt
                         and info['img_id'] not in self._annotated_img_ids)]
