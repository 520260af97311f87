"""COCO-style cell dataset written by ``data_prep/prepare.py``, with seeded deletion."""
import json
import logging
import os.path as osp
import statistics

from mmengine.logging import print_log

from mmdet.datasets import CocoDataset
from mmdet.registry import DATASETS

from .deletion import build_deletion

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


def read_pseudo_labels(path):
    """``{file_name: [[x1, y1, x2, y2, label], ...]}`` of a pseudo-label file (``{}``
    for None); ValueError naming the file and the entry that is not such a list."""
    if path is None:
        return {}
    with open(path) as f:
        images = json.load(f).get('images')
    if not isinstance(images, dict):
        raise ValueError(f'{path}: expected {{"images": {{file_name: [[x1, y1, x2, y2, '
                         'label], ...]}}}}')
    for name, cells in images.items():
        if not all(isinstance(c, list) and len(c) == 5 for c in cells):
            raise ValueError(f'{path}: images[{name!r}] must be a list of [x1, y1, x2, '
                             'y2, label]')
    return images


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
      ``tools/fit_prior.py``, :mod:`mmdet_pu.experiments.pseudo_labels`), added after the
      deletion as instances with ``pseudo=True``: ``{"images": {file_name: [[x1, y1,
      x2, y2, label], ...]}}`` (boxes in the image's pixels, labels 0-based).
    * A missing ``ann_file`` raises an error naming the ``data_prep/prepare.py`` command
      that writes it: ``prepare_cmd`` if given, else one derived from ``data_root``.
    * ``metainfo['mpp']``: the training resolution in micrometres per pixel, the median
      of the image entries' ``mpp`` (written by the converters and the QuPath import),
      unless the config's ``metainfo`` sets ``mpp``; absent when neither gives one. The
      runner stores the metainfo in every checkpoint (``meta.dataset_meta``), where
      whole-slide inference reads it (docs/slides.md). A warning names the file when
      some images lack a resolution or when they differ by more than
      :data:`MPP_SPREAD`.

    Args:
        deletion (dict | None): deletion scheme config.
        prepare_cmd (str | None): command that prepares this dataset (for the error).
        pseudo_labels (str | None): JSON file of pseudo-labeled cells.
    """

    def __init__(self, *args, deletion=None, prepare_cmd=None, pseudo_labels=None,
                 **kwargs):
        self.deletion = build_deletion(deletion)
        self.prepare_cmd = prepare_cmd
        self.pseudo_labels = read_pseudo_labels(pseudo_labels)
        super().__init__(*args, **kwargs)

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
        data_list = super().load_data_list()
        self._check_classes()
        if 'mpp' not in self._metainfo:  # the config's metainfo wins
            mpp = self._training_mpp(self._image_mpps)
            if mpp is not None:
                self._metainfo['mpp'] = mpp
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
        """Every configured class must be a category of the file: CocoDataset would
        otherwise drop its annotations without a word (e.g. a QuPath import whose
        classes differ from the config's ``metainfo``)."""
        classes = tuple(self.metainfo['classes'])
        if len(self.cat_ids) < len(classes):
            raise ValueError(
                f'{self.ann_file}: only {len(self.cat_ids)} of the config\'s classes '
                f'{classes} are categories of this file (its "categories" list the '
                'classes it was prepared with); set metainfo.classes and the model\'s '
                'num_classes to those')

    def parse_data_info(self, raw_data_info):
        """Parse one image like CocoDataset, keep cell fields, apply the deletion."""
        img_info = raw_data_info['raw_img_info']
        width, height = img_info['width'], img_info['height']
        self._image_mpps.append(img_info.get('mpp'))
        data_info = dict(
            img_path=osp.join(self.data_prefix['img'], img_info['file_name']),
            img_id=img_info['img_id'], seg_map_path=None, height=height, width=width,
            file_name=img_info['file_name'],
            source=img_info.get('source', img_info['file_name']),
            x0=img_info.get('x0', 0), y0=img_info.get('y0', 0),
            tiles=img_info.get('tiles', [[0, 0, width, height]]))
        anns = [ann for ann in raw_data_info['raw_ann_info']
                if self._is_valid(ann, width, height)]
        if anns:
            self._annotated_img_ids.add(img_info['img_id'])
        if self.deletion is not None and anns:
            anns = [anns[i] for i in self.deletion.keep(img_info['file_name'], anns)]
        data_info['instances'] = [self._instance(ann) for ann in anns]
        for *bbox, label in self.pseudo_labels.get(img_info['file_name'], ()):
            data_info['instances'].append(dict(bbox=list(bbox), bbox_label=int(label),
                                               ignore_flag=0, pseudo=True))
        return data_info

    def _is_valid(self, ann, width, height):
        """CocoDataset's rules: not ignored, a box of >= 1 px inside the image, known class."""
        x1, y1, w, h = ann['bbox']
        inside_w = min(x1 + w, width) - max(x1, 0)
        inside_h = min(y1 + h, height) - max(y1, 0)
        return (not ann.get('ignore', False) and inside_w > 0 and inside_h > 0
                and ann['area'] > 0 and w >= 1 and h >= 1
                and ann['category_id'] in self.cat_ids)

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
