"""The own-data configs take their classes from the prepared data
(mmdet_pu/datasets/data_classes.py)."""
import json

import pytest
from mmengine.config import Config

from mmdet_pu.datasets.data_classes import apply_data_classes, read_categories
from mmdet_pu.engine.launch import load_config, parse_cfg_options
from tests._data import REPO

CUSTOM = REPO / 'configs' / 'custom'


def write_categories(root, names):
    fold = root / 'annotations' / 'fold0'
    fold.mkdir(parents=True)
    coco = dict(images=[], annotations=[],
                categories=[dict(id=i + 1, name=n) for i, n in enumerate(names)])
    (fold / 'train.json').write_text(json.dumps(coco))
    return f'{root}/'


def data_options(root):
    return parse_cfg_options([f'{split}_dataloader.dataset.data_root={root}'
                              for split in ('train', 'val', 'test')])


def test_multi_class_config_takes_the_datas_classes_and_spreads_its_prior(tmp_path):
    root = write_categories(tmp_path, ['tumor', 'lymphocyte', 'stromal'])
    cfg = load_config(str(CUSTOM / 'custom_mpu.py'), data_options(root))
    for split in ('train', 'val', 'test'):
        metainfo = cfg[f'{split}_dataloader'].dataset.metainfo
        assert metainfo['classes'] == ('tumor', 'lymphocyte', 'stromal')
        assert len(metainfo['palette']) == 3
    head = cfg.model.roi_head.bbox_head
    assert head.num_classes == 3
    assert head.loss_cls.priors == pytest.approx([0.25 / 3] * 3)
    # the base's 400 detections per patch, one cap per class
    assert cfg.model.test_cfg.rcnn.max_per_img == 3 * 400
    # applied once: the runner built from it does not read the data again
    assert cfg.classes_from_data is False
    (tmp_path / 'annotations' / 'fold0' / 'train.json').unlink()
    assert apply_data_classes(cfg).model.roi_head.bbox_head.num_classes == 3
    assert cfg.model.test_cfg.rcnn.max_per_img == 3 * 400


def test_fitted_priors_of_the_right_number_are_kept(tmp_path):
    root = write_categories(tmp_path, ['a', 'b'])
    options = data_options(root)
    options.update(parse_cfg_options(['model.roi_head.bbox_head.loss_cls.priors=[0.1,0.02]']))
    cfg = load_config(str(CUSTOM / 'custom_mpu.py'), options)
    assert cfg.model.roi_head.bbox_head.loss_cls.priors == [0.1, 0.02]


def test_binary_config_takes_the_one_class_and_refuses_several(tmp_path):
    root = write_categories(tmp_path / 'one', ['nucleus'])
    cfg = load_config(str(CUSTOM / 'custom_pu.py'), data_options(root))
    assert cfg.test_dataloader.dataset.metainfo['classes'] == ('nucleus', )
    assert cfg.model.roi_head.bbox_head.num_classes == 1
    assert cfg.model.test_cfg.rcnn.max_per_img == 400
    root = write_categories(tmp_path / 'two', ['tumor', 'lymphocyte'])
    with pytest.raises(ValueError, match=r'has 2 classes \(tumor, lymphocyte\) but the config '
                                         r'trains one .* configs/custom/custom_mpu.py'):
        load_config(str(CUSTOM / 'custom_pu.py'), data_options(root))


def test_without_data_or_without_the_key_the_config_stays(tmp_path):
    cfg = load_config(str(CUSTOM / 'custom_mpu.py'), data_options(tmp_path / 'none'))
    assert cfg.train_dataloader.dataset.metainfo['classes'] == ('cell', )
    assert cfg.model.roi_head.bbox_head.loss_cls.priors == [0.25]
    root = write_categories(tmp_path, ['a', 'b'])
    paper = Config.fromfile(str(REPO / 'configs' / 'real' / 'mnfinder_keep1_pu.py'))
    paper.merge_from_dict(data_options(root))
    assert apply_data_classes(paper).model.roi_head.bbox_head.num_classes == 1


def test_read_categories_checks_the_file(tmp_path):
    assert read_categories(str(tmp_path / 'missing.json')) is None
    bad = tmp_path / 'bad.json'
    bad.write_text('[1, 2]')
    with pytest.raises(ValueError, match='bad.json: not a COCO annotation file'):
        read_categories(str(bad))
    bad.write_text('{"categories": [{"id": 1}]}')
    with pytest.raises(ValueError, match='bad.json: expected "categories" with "id" and '
                                         '"name"'):
        read_categories(str(bad))
