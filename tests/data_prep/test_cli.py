"""Command-line behaviour of data_prep/prepare.py and data_prep/delete.py on bad input."""
import json

import numpy as np
import pytest
import scipy.io

from cellio.cli import report_user_errors
from mmdet_pu.datasets import delete_from_coco
from tests import _cli as cli
from tests._data import make_tiny_coco
from tests.data_prep.raw_fixtures import make_crchisto

DETECTION = 'CRCHistoPhenotypes_2016_04_28/Detection'
IMAGE = dict(id=1, file_name='a.png', width=9, height=9)
ANNOTATION = dict(id=1, image_id=1, category_id=1, bbox=[0, 0, 2, 2], area=4)


def run_script(script, *args):
    """``python data_prep/<script> ARGS`` from the repository root (in this process)."""
    return cli.run_script(f'data_prep/{script}', *args)


@pytest.fixture
def malformed_raw(tmp_path):
    raw = tmp_path / 'raw'
    make_crchisto(raw, n_images=3)
    scipy.io.savemat(raw / DETECTION / 'img2' / 'img2_detection.mat',
                     {'detection': np.array([[5.0, np.nan]])})
    return raw


def test_prepare_reports_malformed_input_without_traceback(malformed_raw, tmp_path):
    out = tmp_path / 'out'
    result = run_script('prepare.py', 'crchisto', '--src', malformed_raw, '--out', out,
                        '--no-progress')
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"prepare.py: error: {DETECTION}/img2/img2_detection.mat: row 1 of 'detection' "
        'is not finite: [5.0, nan]')
    assert 'Traceback' not in result.stderr
    assert not out.exists()


def test_prepare_reports_existing_output_and_missing_src(malformed_raw, tmp_path):
    out = tmp_path / 'out'
    out.mkdir()
    (out / 'keep.txt').write_text('old')
    result = run_script('prepare.py', 'synthetic', '--out', out, '--num-images', '6',
                        '--no-progress')
    assert result.returncode == 2 and 'Traceback' not in result.stderr
    assert result.stderr.startswith(f'prepare.py: error: {out} exists and is not empty')
    assert [p.name for p in out.iterdir()] == ['keep.txt']
    result = run_script('prepare.py', 'crchisto', '--src', tmp_path / 'nowhere', '--out',
                        tmp_path / 'new')
    assert result.returncode == 2 and 'Traceback' not in result.stderr
    assert 'nowhere: no such directory' in result.stderr
    assert not (tmp_path / 'new').exists()


def test_delete_reports_bad_input_without_traceback(tmp_path):
    bad = tmp_path / 'train.json'
    bad.write_text('{"images": [')
    out = tmp_path / 'incomplete.json'
    result = run_script('delete.py', bad, '--scheme', 'keep1_random', '--out', out)
    assert result.returncode == 2 and 'Traceback' not in result.stderr
    assert result.stderr.startswith(f'delete.py: error: {bad}: cannot read a COCO JSON')
    bad.write_text(json.dumps(dict(images=[IMAGE], annotations=[ANNOTATION],
                                   categories=[dict(id=1, name='mitosis')])))
    result = run_script('delete.py', bad, '--scheme', 'tupac_original_keep1', '--out', out)
    assert result.returncode == 2 and 'Traceback' not in result.stderr
    assert "annotation 1 of image a.png has no 'original' field" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize('content, message', [
    ({}, '"images": expected an array, got missing'),
    ([], 'expected a COCO object {"images": [...], "annotations": [...], '
         '"categories": [...]}, got an array'),
    (dict(images={}, annotations=[], categories=[]),
     '"images": expected an array, got an object'),
    (dict(images=[dict(IMAGE, width=None), 3], annotations=[], categories=[]),
     'images[1]: expected an object, got a number'),
    (dict(images=[dict(id=1, file_name='a.png', width=9)], annotations=[], categories=[]),
     'images[0] has no "height" (a COCO image needs id, file_name, width, height)'),
    (dict(images=[IMAGE], annotations=[dict(ANNOTATION, bbox=[0, 0, 2])], categories=[]),
     'annotations[0] "bbox": expected [x, y, w, h] (four numbers), got [0, 0, 2]'),
])
def test_delete_checks_the_coco_structure(tmp_path, content, message):
    bad = tmp_path / 'train.json'
    bad.write_text(json.dumps(content))
    out = tmp_path / 'incomplete.json'
    result = run_script('delete.py', bad, '--scheme', 'keep1_random', '--out', out)
    assert result.returncode == 2
    assert result.stderr == f'delete.py: error: {bad}: {message}\n'
    assert not out.exists()


def test_delete_draws_among_the_training_classes(tmp_path):
    """``--classes`` (a binary config on a two-class file): the other class's cells are
    not drawn and stay; the same cells as CellCocoDataset keeps."""
    ann = make_tiny_coco(tmp_path, n_images=6, num_classes=2, cells_per_image=4)
    coco = json.loads(open(ann).read())
    out = tmp_path / 'incomplete.json'
    result = run_script('delete.py', ann, '--scheme', 'keep1_random', '--classes', 'cell1',
                        '--out', out)
    assert result.returncode == 0, result.stderr
    kept = json.loads(out.read_text())['annotations']
    assert [a for a in kept if a['category_id'] == 1] == \
        [a for a in coco['annotations'] if a['category_id'] == 1]
    with_cell1 = {a['image_id'] for a in coco['annotations'] if a['category_id'] == 2}
    assert sorted(a['image_id'] for a in kept if a['category_id'] == 2) == sorted(with_cell1)
    assert kept == delete_from_coco(coco, dict(type='KeepPerPatch', k=1, seed=0),
                                    ('cell1', ))['annotations']
    result = run_script('delete.py', ann, '--scheme', 'keep1_random', '--classes', 'tumor',
                        '--out', out)
    assert result.returncode == 2
    assert result.stderr == (f"delete.py: error: {ann}: no category named ['tumor'] (its "
                             "categories: ['cell0', 'cell1'])\n")


def test_bugs_keep_their_traceback(capsys):
    def failing(argv):
        raise KeyError('a bug')

    with pytest.raises(KeyError):
        report_user_errors(failing)

    def bad_input(argv):
        raise FileNotFoundError('x.csv: not found')

    assert report_user_errors(bad_input) == 2
    assert capsys.readouterr().err.endswith('error: x.csv: not found\n')
    assert report_user_errors(lambda argv: None) == 0
