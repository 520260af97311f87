import json
from pathlib import Path

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope

from data_prep import prepare
from mmdet.registry import DATASETS
from mmdet.structures.bbox import HorizontalBoxes
from mmdet_pu.datasets import (CellCocoDataset, DeletionScheme, PackCellInputs, cell_coco,
                               delete_from_coco)
from tests._data import make_tiny_coco, write_tiny_config

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def synthetic_root(tmp_path_factory):
    root = tmp_path_factory.mktemp('data') / 'synthetic_binary'
    prepare.main(['synthetic', '--out', str(root), '--num-images', '6', '--size', '256',
                  '--tile', '128', '--no-progress'])
    return root


def _dataset(root, ann='annotations/fold0/train.json', classes=('mitosis', ), pipeline=(),
             **kwargs):
    return CellCocoDataset(data_root=str(root) + '/', ann_file=ann,
                           data_prefix=dict(img='images/'),
                           metainfo=dict(classes=classes), pipeline=list(pipeline),
                           **kwargs)


def test_complete_annotations_and_metadata(synthetic_root):
    dataset = _dataset(synthetic_root)
    coco = json.loads((synthetic_root / 'annotations/fold0/train.json').read_text())
    assert len(dataset) == len(coco['images'])
    assert sum(len(d['instances']) for d in dataset) == len(coco['annotations'])
    info = dataset[1]
    assert (info['x0'], info['y0']) == (128, 0)
    assert info['source'].startswith('binary_') and info['tiles'] == [[0, 0, 128, 128]]
    assert all(0.5 <= inst['score'] <= 1 for inst in info['instances'])
    whole = _dataset(synthetic_root, 'annotations/fold0/test_whole.json', test_mode=True)
    assert whole[0]['tiles'] == [[0, 0, 128, 128], [128, 0, 128, 128],
                                 [0, 128, 128, 128], [128, 128, 128, 128]]


def test_deletion_matches_the_exported_file(synthetic_root):
    scheme = dict(type='KeepPerPatch', k=1, seed=3)
    dataset = _dataset(synthetic_root, deletion=scheme)
    assert all(len(d['instances']) <= 1 for d in dataset)
    coco = json.loads((synthetic_root / 'annotations/fold0/train.json').read_text())
    exported = delete_from_coco(coco, scheme)
    boxes = sorted((a['image_id'], tuple(a['bbox'])) for a in exported['annotations'])
    loaded = sorted((d['img_id'], (b[0], b[1], b[2] - b[0], b[3] - b[1]))
                    for d in dataset for b in [i['bbox'] for i in d['instances']])
    assert loaded == boxes
    agreement = _dataset(synthetic_root, deletion=dict(type='KeepPerPatch', order='score'))
    for info, complete in zip(agreement, _dataset(synthetic_root)):
        if complete['instances']:
            assert info['instances'][0]['score'] == max(
                i['score'] for i in complete['instances'])


def test_instances_keep_extra_fields_and_subset_deletion_matches_export(tmp_path):
    make_tiny_coco(tmp_path, n_images=5, cells_per_image=4)
    ann_file = tmp_path / 'annotations' / 'train.json'
    coco = json.loads(ann_file.read_text())
    for ann in coco['annotations']:
        ann['original'] = ann['id'] % 3 != 0
    ann_file.write_text(json.dumps(coco))
    kwargs = dict(ann='annotations/train.json', classes=('cell0', ))
    complete = _dataset(tmp_path, **kwargs)
    flags = [inst['original'] for info in complete for inst in info['instances']]
    assert flags == [ann['original'] for ann in coco['annotations']]
    assert all(len(inst['point']) == 2 for info in complete for inst in info['instances'])
    assert all('id' not in inst and 'area' not in inst
               for info in complete for inst in info['instances'])

    scheme = dict(type='KeepPerPatch', k=1, subset='original', seed=2)
    dataset = _dataset(tmp_path, deletion=scheme, **kwargs)
    exported = delete_from_coco(coco, scheme)
    loaded = sorted((info['img_id'], tuple(inst['point']))
                    for info in dataset for inst in info['instances'])
    assert loaded == sorted((a['image_id'], tuple(a['point']))
                            for a in exported['annotations'])
    assert len(loaded) == len({a['image_id'] for a in coco['annotations'] if a['original']})
    assert all(inst['original'] for info in dataset for inst in info['instances'])


def test_deletion_draws_among_the_loaded_annotations_as_the_export_does(tmp_path):
    """Annotations the dataset skips (a degenerate box, an ignored one, a box outside the
    image, a class the config does not train) are never drawn, and the export keeps
    them as they are: the same cells remain either way."""
    make_tiny_coco(tmp_path, n_images=12, num_classes=2, cells_per_image=3)
    ann_file = tmp_path / 'annotations' / 'train.json'
    coco = json.loads(ann_file.read_text())
    skipped = []
    for image in coco['images']:
        for extra in (dict(bbox=[5.0, 5.0, 0.5, 10.0]), dict(bbox=[5, 5, 10, 10], ignore=True),
                      dict(bbox=[500, 500, 10, 10])):
            extra = dict(extra, id=len(coco['annotations']) + 1, image_id=image['id'],
                         category_id=1, area=100.0, iscrowd=0, point=[9.0, 9.0])
            coco['annotations'].insert(0, extra)
            skipped.append(extra['id'])
    ann_file.write_text(json.dumps(coco))
    scheme = dict(type='KeepPerPatch', k=1, seed=0)
    dataset = _dataset(tmp_path, ann='annotations/train.json', classes=('cell1', ),
                       deletion=scheme)
    exported = delete_from_coco(coco, scheme, classes=('cell1', ))
    exported_ids = {ann['id'] for ann in exported['annotations']}
    assert set(skipped) <= exported_ids  # left as they were
    cell1 = [a for a in exported['annotations'] if a['category_id'] == 2]
    assert sorted((a['image_id'], tuple(a['point'])) for a in cell1) == sorted(
        (info['img_id'], tuple(inst['point'])) for info in dataset
        for inst in info['instances'])
    assert all(len(info['instances']) == 1 for info in dataset
               if any(a['image_id'] == info['img_id'] and a['category_id'] == 2
                      for a in coco['annotations']))
    # every class of the file by default: the cell0 cells are candidates too
    both = delete_from_coco(coco, scheme)
    per_image = {}
    for ann in both['annotations']:
        if ann['id'] not in skipped:
            per_image[ann['image_id']] = per_image.get(ann['image_id'], 0) + 1
    assert set(per_image.values()) == {1}


class DeleteAll(DeletionScheme):
    def choose(self, rng, anns):
        return []


def test_images_emptied_by_deletion_stay_unlabeled_data(tmp_path):
    make_tiny_coco(tmp_path, n_images=3)
    ann_file = tmp_path / 'annotations' / 'train.json'
    coco = json.loads(ann_file.read_text())
    coco['annotations'] = [a for a in coco['annotations'] if a['image_id'] != 2]
    ann_file.write_text(json.dumps(coco))
    kwargs = dict(ann='annotations/train.json', classes=('cell0', ),
                  filter_cfg=dict(filter_empty_gt=True))
    dataset = _dataset(tmp_path, **kwargs)  # image 2 never had a cell
    assert [d['img_id'] for d in dataset] == [1, 3]
    emptied = _dataset(tmp_path, deletion=DeleteAll(), **kwargs)
    assert [d['img_id'] for d in emptied] == [1, 3]
    assert all(d['instances'] == [] for d in emptied)


def test_missing_annotation_file_names_the_prepare_command(tmp_path):
    with pytest.raises(FileNotFoundError, match=r'python data_prep/prepare.py synthetic '
                                                r'--out .*synthetic_multi'):
        _dataset(tmp_path / 'synthetic_multi')
    with pytest.raises(FileNotFoundError,
                       match=r'prepare.py mitos14 --src <raw dataset dir> --out'):
        _dataset(tmp_path / 'mitos14')
    with pytest.raises(FileNotFoundError, match='run this'):
        _dataset(tmp_path / 'x', prepare_cmd='run this')


def test_dataset_config_packs_cell_metadata(synthetic_root):
    init_default_scope('mmdet')
    cfg = Config.fromfile(str(REPO / 'configs/_base_/datasets/synthetic_binary.py'))
    for name in ('train_dataloader', 'test_dataloader'):
        dataset_cfg = cfg[name]['dataset']
        dataset_cfg['data_root'] = str(synthetic_root) + '/'
        sample = DATASETS.build(dataset_cfg)[0]['data_samples']
        for key in ('source', 'x0', 'y0', 'tiles'):
            assert key in sample.metainfo
    assert sample.metainfo['img_shape'] == (256, 256)  # the test set is whole images
    assert sample.metainfo['scale_factor'] == (1.0, 1.0)  # needed to rescale predictions
    assert len(sample.metainfo['tiles']) == 4
    assert len(sample.gt_instances) > 0


def _set_mpp(ann_file, values):
    """Give the image entries of ``ann_file`` these ``mpp`` (None: no entry)."""
    coco = json.loads(Path(ann_file).read_text())
    for image, mpp in zip(coco['images'], values):
        image.pop('mpp', None)
        if mpp is not None:
            image['mpp'] = mpp
    Path(ann_file).write_text(json.dumps(coco))


def test_training_resolution_is_the_files_unless_the_config_sets_it(tmp_path, monkeypatch):
    warnings = []
    monkeypatch.setattr(cell_coco, 'print_log', lambda msg, **kw: warnings.append(msg))
    ann_file = make_tiny_coco(tmp_path, n_images=4, size=64)

    def build(**metainfo):
        return CellCocoDataset(data_root=str(tmp_path), ann_file=ann_file,
                               data_prefix=dict(img='images/'), pipeline=[],
                               metainfo=dict(classes=('cell0', ), **metainfo))

    assert 'mpp' not in build().metainfo  # no resolution anywhere
    _set_mpp(ann_file, [0.25, 0.25, 0.25, 0.25])
    assert build().metainfo['mpp'] == 0.25
    assert build(mpp=0.5).metainfo['mpp'] == 0.5  # the config's metainfo wins
    assert not warnings
    _set_mpp(ann_file, [0.25, None, 0.5, 0.24])  # mixed scans: the median, and warnings
    assert build().metainfo['mpp'] == 0.25
    assert len(warnings) == 2
    assert 'train.json: 1 of 4 images have no mpp' in warnings[0]
    assert 'range from 0.24 to 0.5 micrometres per pixel' in warnings[1]


def test_trains_with_deletion(tmp_path):
    ann_file = make_tiny_coco(tmp_path / 'data', n_images=4, size=128)
    _set_mpp(ann_file, [0.5] * 4)
    extra = ("train_dataloader['dataset'].update(type='CellCocoDataset', "
             "deletion=dict(type='KeepPerPatch', k=1))\n"
             "val_dataloader = val_cfg = val_evaluator = None\n")
    config = write_tiny_config(tmp_path / 'cfg.py', tmp_path / 'data', max_iters=2,
                               extra=extra)
    from mmengine.runner import Runner
    cfg = Config.fromfile(config)
    cfg.work_dir = str(tmp_path / 'work')
    runner = Runner.from_cfg(cfg)
    dataset = runner.train_dataloader.dataset
    assert isinstance(dataset, CellCocoDataset)
    assert all(len(dataset.get_data_info(i)['instances']) == 1 for i in range(len(dataset)))
    runner.train()
    checkpoint = torch.load(tmp_path / 'work' / 'iter_2.pth', map_location='cpu',
                            weights_only=False)
    # the training resolution of the file travels in the checkpoint (slide inference)
    assert checkpoint['meta']['dataset_meta']['mpp'] == 0.5


def test_classes_missing_from_the_file_are_an_error(tmp_path):
    """A config whose classes are not the file's categories would train on nothing."""
    ann_file = make_tiny_coco(tmp_path, n_images=1, size=64)  # category 'cell0'
    cfg = dict(type='CellCocoDataset', data_root=str(tmp_path), ann_file=ann_file,
               data_prefix=dict(img='images/'), pipeline=[],
               metainfo=dict(classes=('mitosis', )))
    with pytest.raises(ValueError, match=r"only 0 of the config's classes \('mitosis',\)"):
        DATASETS.build(cfg)
    assert len(DATASETS.build(dict(cfg, metainfo=dict(classes=('cell0', ))))) == 1


def test_classes_in_another_order_than_the_files_are_an_error(tmp_path):
    """CocoDataset numbers the labels in the order of the file's categories, whatever
    the order of metainfo.classes: the dataset refuses a config listing them otherwise."""
    ann_file = make_tiny_coco(tmp_path, n_images=1, size=64, num_classes=2)
    coco = json.loads(Path(ann_file).read_text())
    coco['categories'] = [dict(id=1, name='tumor'), dict(id=2, name='lymphocyte')]
    Path(ann_file).write_text(json.dumps(coco))
    cfg = dict(data_root=str(tmp_path), ann_file=ann_file,
               data_prefix=dict(img='images/'), pipeline=[],
               metainfo=dict(classes=('lymphocyte', 'tumor')))
    plain = DATASETS.build(dict(cfg, type='CocoDataset'))
    assert plain.cat2label[1] == 0  # a tumor gets label 0, classes[0] = 'lymphocyte'
    with pytest.raises(ValueError, match=(
            r"train\.json: its categories are \('tumor', 'lymphocyte'\) in this order, "
            r"the config's metainfo\.classes \('lymphocyte', 'tumor'\); .*set "
            r"metainfo\.classes to \('tumor', 'lymphocyte'\)")):
        DATASETS.build(dict(cfg, type='CellCocoDataset'))
    ordered = DATASETS.build(dict(cfg, type='CellCocoDataset',
                                  metainfo=dict(classes=('tumor', 'lymphocyte'))))
    labels = [inst['bbox_label'] for inst in ordered[0]['instances']]
    assert labels == [ann['category_id'] - 1 for ann in coco['annotations']]


def test_pseudo_labels_join_the_labels_that_the_deletion_kept(synthetic_root, tmp_path):
    deletion = dict(type='KeepPerPatch', k=1, order='random', seed=0)
    plain = _dataset(synthetic_root, deletion=deletion)
    name = plain[0]['file_name']
    pseudo = tmp_path / 'pseudo.json'
    pseudo.write_text(json.dumps({'images': {name: [[1, 2, 11, 12, 0], [20, 20, 30, 32, 0]]},
                                  'pseudo': 2}))
    with_pseudo = _dataset(synthetic_root, deletion=deletion, pseudo_labels=str(pseudo))
    kept = plain[0]['instances']
    added = with_pseudo[0]['instances'][len(kept):]
    assert with_pseudo[0]['instances'][:len(kept)] == kept
    assert [(a['bbox'], a['bbox_label'], a['pseudo']) for a in added] == [
        ([1, 2, 11, 12], 0, True), ([20, 20, 30, 32], 0, True)]
    assert all(with_pseudo[i] == plain[i] for i in range(1, len(plain)))
    pseudo.write_text(json.dumps({'images': {name: [[1, 2, 11, 12]]}}))
    with pytest.raises(ValueError, match=r'pseudo\.json: images\[.*\]\[0\]: expected '
                                         r'\[x1, y1, x2, y2, label\]'):
        _dataset(synthetic_root, pseudo_labels=str(pseudo))
    # a key that is no image of the annotation file, a box outside its image
    pseudo.write_text(json.dumps({'images': {'images/' + name: [[1, 2, 11, 12, 0]]}}))
    with pytest.raises(ValueError, match=r"pseudo\.json: 1 image\(s\) not in .*train\.json"
                                         r", e\.g\. \['images/"):
        _dataset(synthetic_root, pseudo_labels=str(pseudo))
    pseudo.write_text(json.dumps({'images': {name: [[1, 2, 11, 12, 0],
                                                    [200, 200, 300, 300, 0]]}}))
    with pytest.raises(ValueError, match=r"images\['.*'\]\[1\]: box \[200, 200, 300, 300\] "
                                         r'lies outside the 128x128 image'):
        _dataset(synthetic_root, pseudo_labels=str(pseudo))


def test_uncertain_detections_become_ignored_instances(synthetic_root, tmp_path):
    """The optional "uncertain" list joins after the pseudo-labels with ignore_flag=1,
    and mmdet's pipeline packs it as the image's ignored instances."""
    deletion = dict(type='KeepPerPatch', k=1, order='random', seed=0)
    plain = _dataset(synthetic_root, deletion=deletion)
    name = plain[0]['file_name']
    pseudo = tmp_path / 'pseudo.json'
    pseudo.write_text(json.dumps({'images': {name: [[1, 2, 11, 12, 0]]},
                                  'uncertain': {name: [[40, 40, 52, 50, 0]]}}))
    with_pseudo = _dataset(synthetic_root, deletion=deletion, pseudo_labels=str(pseudo))
    kept = plain[0]['instances']
    added = with_pseudo[0]['instances'][len(kept):]
    assert [(a['bbox'], a['ignore_flag'], a['pseudo']) for a in added] == [
        ([1, 2, 11, 12], 0, True), ([40, 40, 52, 50], 1, True)]
    init_default_scope('mmdet')
    packed = _dataset(synthetic_root, deletion=deletion, pseudo_labels=str(pseudo),
                      pipeline=[dict(type='LoadImageFromFile'),
                                dict(type='LoadAnnotations', with_bbox=True),
                                dict(type='PackDetInputs')])[0]['data_samples']
    assert packed.ignored_instances.bboxes.tensor.tolist() == [[40, 40, 52, 50]]
    assert len(packed.gt_instances) == len(kept) + 1
    # an image that is not in the annotation file, a box outside its image
    pseudo.write_text(json.dumps({'images': {}, 'uncertain': {'x.png': [[1, 2, 3, 4, 0]]}}))
    with pytest.raises(ValueError, match=r"pseudo\.json: 1 image\(s\) not in"):
        _dataset(synthetic_root, pseudo_labels=str(pseudo))
    pseudo.write_text(json.dumps({'images': {},
                                  'uncertain': {name: [[200, 200, 300, 300, 0]]}}))
    with pytest.raises(ValueError, match=r"uncertain\['.*'\]\[0\]: box \[200, 200, "
                                         r'300, 300\] lies outside the 128x128 image'):
        _dataset(synthetic_root, pseudo_labels=str(pseudo))


def test_pseudo_label_weights_are_the_files_scores_packed_per_cell(synthetic_root, tmp_path):
    """pseudo_label_weights: each learned pseudo-label carries its score; PackCellInputs
    packs the weights of the cells it keeps (1 for the labeled ones), none for ignored."""
    deletion = dict(type='KeepPerPatch', k=1, order='random', seed=0)
    plain = _dataset(synthetic_root, deletion=deletion)
    name = plain[0]['file_name']
    pseudo = tmp_path / 'pseudo.json'
    pseudo.write_text(json.dumps({'images': {name: [[1, 2, 11, 12, 0], [20, 20, 30, 32, 0]]},
                                  'scores': {name: [0.25, 0.75]},
                                  'uncertain': {name: [[40, 40, 52, 50, 0]]}}))
    init_default_scope('mmdet')
    pipeline = [dict(type='LoadImageFromFile'), dict(type='LoadAnnotations', with_bbox=True),
                dict(type='RandomFlip', prob=1.0), dict(type='PackCellInputs')]
    weighted = _dataset(synthetic_root, deletion=deletion, pseudo_labels=str(pseudo),
                        pseudo_label_weights=True, pipeline=pipeline)
    kept = len(plain[0]['instances'])
    packed = weighted[0]['data_samples']
    assert packed.gt_instances.weights.tolist() == [1.0] * kept + [0.25, 0.75]
    assert packed.ignored_instances.weights.tolist() == [1.0]  # ignored all the same
    # without weights PackCellInputs packs what PackDetInputs does
    unweighted = _dataset(synthetic_root, deletion=deletion, pseudo_labels=str(pseudo),
                          pipeline=pipeline)[0]['data_samples']
    assert 'weights' not in unweighted.gt_instances
    assert unweighted.gt_instances.bboxes.tensor.tolist() == \
        packed.gt_instances.bboxes.tensor.tolist()
    # the weights need their packing transform, and the file its scores
    with pytest.raises(ValueError, match=r"pseudo_label_weights=True: the pipeline must "
                                         r"pack .*PackCellInputs.*got \['LoadImageFromFile'"):
        _dataset(synthetic_root, pseudo_labels=str(pseudo), pseudo_label_weights=True,
                 pipeline=pipeline[:3] + [dict(type='PackDetInputs')])
    pseudo.write_text(json.dumps({'images': {name: [[1, 2, 11, 12, 0]]}}))
    with pytest.raises(ValueError, match=r'pseudo\.json: expected a "scores" object'):
        _dataset(synthetic_root, pseudo_labels=str(pseudo), pseudo_label_weights=True,
                 pipeline=pipeline)
    pseudo.write_text(json.dumps({'images': {name: [[1, 2, 11, 12, 0]]},
                                  'scores': {name: [0.5, 0.5]}}))
    with pytest.raises(ValueError, match=r"pseudo\.json: scores\['.*'\]: expected 1 "
                                         r'scores in \(0, 1\], one per cell of images'):
        _dataset(synthetic_root, pseudo_labels=str(pseudo), pseudo_label_weights=True,
                 pipeline=pipeline)


def test_pack_cell_inputs_refuses_weights_that_no_longer_match_the_boxes():
    results = dict(img=np.zeros((8, 8, 3), np.uint8), img_path='a.png',
                   instances=[dict(weight=0.5), dict(weight=0.7)],
                   gt_bboxes=HorizontalBoxes(np.zeros((1, 4), np.float32)),
                   gt_bboxes_labels=np.zeros(1, np.int64), gt_ignore_flags=np.zeros(1, bool))
    with pytest.raises(ValueError, match=r'PackCellInputs: 2 instances but 1 boxes in '
                                         r'a\.png'):
        PackCellInputs().transform(results)


def test_a_pseudo_label_of_unknown_class_is_a_cell_of_no_class(tmp_path):
    """Class -1 in the file: label C + 1 with several classes (UnknownClassCELoss learns
    it as any class against the background), the class itself with one."""
    make_tiny_coco(tmp_path, n_images=1, size=64, num_classes=2)
    name = json.loads((tmp_path / 'annotations/train.json').read_text())['images'][0][
        'file_name']
    pseudo = tmp_path / 'pseudo.json'
    pseudo.write_text(json.dumps({'images': {name: [[1, 2, 11, 12, -1], [20, 20, 30, 30, 1]]},
                                  'uncertain': {name: [[40, 40, 50, 50, -1]]}}))
    two = _dataset(tmp_path, ann='annotations/train.json', classes=('cell0', 'cell1'),
                   pseudo_labels=str(pseudo))
    added = [(a['bbox_label'], a['ignore_flag']) for a in two[0]['instances']
             if a.get('pseudo')]
    assert added == [(3, 0), (1, 0), (3, 1)]
    assert cell_coco.unknown_class_label(2) == 3 and cell_coco.unknown_class_label(1) == 0
    pseudo.write_text(json.dumps({'images': {name: [[1, 2, 11, 12, -1]]}}))
    one = _dataset(tmp_path, ann='annotations/train.json', classes=('cell0', ),
                   pseudo_labels=str(pseudo))
    assert [a['bbox_label'] for a in one[0]['instances'] if a.get('pseudo')] == [0]
    # a single-class detector's file taught as cells of unknown class, by the config
    pseudo.write_text(json.dumps({'images': {name: [[1, 2, 11, 12, 0]]}}))
    taught = _dataset(tmp_path, ann='annotations/train.json', classes=('cell0', 'cell1'),
                      pseudo_labels=str(pseudo), pseudo_label_class=-1)
    assert [a['bbox_label'] for a in taught[0]['instances'] if a.get('pseudo')] == [3]
    with pytest.raises(ValueError, match=r'pseudo_label_class: expected the label .* in '
                                         r'0\.\.1 .*or -1 .*got 2'):
        _dataset(tmp_path, ann='annotations/train.json', classes=('cell0', 'cell1'),
                 pseudo_labels=str(pseudo), pseudo_label_class=2)


@pytest.mark.parametrize('content, message', [
    ([['a.png', [0, 0, 10, 10, 0]]],
     r'pseudo\.json: expected \{"images": .*got a JSON list'),
    ({'images': {'a.png': [0, 0, 10, 10, 0]}},
     r"pseudo\.json: images\['a\.png'\]\[0\]: expected \[x1, y1, x2, y2, label\]"),
    ({'images': {'a.png': [[0, 0, 10, 10, 0], [0, 0, 10, 10, 'x']]}},
     r"pseudo\.json: images\['a\.png'\]\[1\]: expected the label to be a class index "
     r"in 0\.\.1 \(2 classes .*got 'x'"),
    ({'images': {'a.png': [[0, 0, 10, 10, 2]]}},
     r"images\['a\.png'\]\[0\]: expected the label .* in 0\.\.1 .*got 2"),
    ({'images': {'a.png': [[0, 0, 10, 10, -2]]}}, r'or -1 for a cell of unknown class, got -2'),
    ({'images': {'a.png': [[0, 0, 10, 10, 1.0]]}}, r'got 1\.0'),
    ({'images': {'a.png': [[0, '0', 10, 10, 0]]}},
     r"images\['a\.png'\]\[0\]: expected \[x1, y1, x2, y2, label\] with numeric "
     r"coordinates, got \[0, '0', 10, 10, 0\]"),
    ({'images': {'a.png': [[0, 0, float('nan'), 10, 0]]}}, r'numeric coordinates'),
    ({'images': {'a.png': [[50, 50, 20, 20, 0]]}},
     r"images\['a\.png'\]\[0\]: expected a box with x1 < x2 and y1 < y2, got \[50, 50, "
     r'20, 20, 0\]'),
    ({'images': {}, 'uncertain': [[0, 0, 10, 10, 0]]},
     r'pseudo\.json: "uncertain": expected \{file_name: .*got a JSON list'),
    ({'images': {}, 'uncertain': {'a.png': [[0, 0, 10, 10, 2]]}},
     r"pseudo\.json: uncertain\['a\.png'\]\[0\]: expected the label .*got 2")])
def test_pseudo_labels_are_checked_against_the_dataset(tmp_path, content, message):
    """A malformed entry or a label that is no class of the dataset names the file, the
    image and the entry before any image is parsed."""
    make_tiny_coco(tmp_path, n_images=1, size=64, num_classes=2)
    pseudo = tmp_path / 'pseudo.json'
    pseudo.write_text(json.dumps(content))
    with pytest.raises(ValueError, match=message):
        _dataset(tmp_path, ann='annotations/train.json', classes=('cell0', 'cell1'),
                 pseudo_labels=str(pseudo))
