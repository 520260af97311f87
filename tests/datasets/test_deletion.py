import json

import numpy as np
import pytest

from data_prep import delete
from mmdet_pu.datasets.deletion import (CapPerClass, KeepPerPatch, KeepRegion,
                                        build_deletion, delete_from_coco)


def _coco(cells_per_image, classes=1, seed=0):
    """COCO dict with ``cells_per_image[i]`` annotations on image i, random classes."""
    rng = np.random.default_rng(seed)
    images, anns = [], []
    for i, n in enumerate(cells_per_image):
        images.append(dict(id=i + 1, file_name=f'tiles/img{i}_x0_y0.png', width=100,
                           height=100))
        for _ in range(n):
            anns.append(dict(id=len(anns) + 1, image_id=i + 1,
                             category_id=int(rng.integers(classes)) + 1,
                             bbox=[1, 1, 10, 10], area=100, iscrowd=0,
                             score=float(rng.uniform(0.5, 1))))
    categories = [dict(id=c + 1, name=f'c{c}') for c in range(classes)]
    return dict(images=images, annotations=anns, categories=categories)


def _kept_ids(coco):
    return sorted(ann['id'] for ann in coco['annotations'])


def _anns(labels, **fields):
    """Annotation dicts with ``category_id`` from ``labels`` and per-annotation fields."""
    return [dict(id=i + 1, category_id=label, **{k: v[i] for k, v in fields.items()})
            for i, label in enumerate(labels)]


def test_keep_per_patch_keeps_min_k_n_per_image():
    cells = [0, 1, 2, 3, 7, 12]
    coco = _coco(cells)
    for k in (1, 2, 5):
        kept = delete_from_coco(coco, dict(type='KeepPerPatch', k=k))
        per_image = np.bincount([a['image_id'] for a in kept['annotations']],
                                minlength=len(cells) + 1)[1:]
        assert per_image.tolist() == [min(k, n) for n in cells]
        assert kept['images'] == coco['images']


def test_deletion_is_seeded_and_independent_of_dataset_order():
    coco = _coco([5] * 20)
    first = _kept_ids(delete_from_coco(coco, dict(type='KeepPerPatch', k=2, seed=1)))
    images_only = dict(coco, images=coco['images'][::-1])
    assert _kept_ids(delete_from_coco(images_only, dict(type='KeepPerPatch', k=2,
                                                        seed=1))) == first
    assert _kept_ids(delete_from_coco(coco, dict(type='KeepPerPatch', k=2,
                                                 seed=1))) == first
    assert _kept_ids(delete_from_coco(coco, dict(type='KeepPerPatch', k=2,
                                                 seed=2))) != first
    # one image's result does not depend on which other images are in the file
    scheme = KeepPerPatch(k=2, seed=1)
    alone = scheme.keep('tiles/img3_x0_y0.png', _anns([1] * 5))
    with_others = [a['id'] for a in delete_from_coco(coco, scheme)['annotations']
                   if a['image_id'] == 4]
    assert [coco['annotations'][15 + i]['id'] for i in alone] == with_others


def test_random_keep_is_uniform_over_annotations():
    scheme = KeepPerPatch(k=1)
    chosen = [scheme.keep(f'img{i}.png', _anns([1] * 4))[0] for i in range(4000)]
    frequencies = np.bincount(chosen, minlength=4) / 4000
    np.testing.assert_allclose(frequencies, 0.25, atol=0.03)


def test_keep_highest_agreement():
    scheme = KeepPerPatch(k=2, order='score')
    scores = [0.6, 0.9, 0.5, 1.0, 0.7]
    assert scheme.keep('a.png', _anns([1] * 5, score=scores)).tolist() == [1, 3]
    ties = {tuple(scheme.keep(f'{i}.png', _anns([1] * 3, score=[1.0] * 3)).tolist())
            for i in range(50)}
    assert len(ties) == 3  # ties are broken at random, not always by position
    with pytest.raises(ValueError, match="annotation 2 of image a.png has no 'score'"):
        scheme.keep('a.png', [dict(id=1, category_id=1, score=1.0),
                              dict(id=2, category_id=1)])
    coco = _coco([4, 6])
    kept = delete_from_coco(coco, dict(type='KeepPerPatch', k=1, order='score'))
    for ann in kept['annotations']:
        best = max(a['score'] for a in coco['annotations']
                   if a['image_id'] == ann['image_id'])
        assert ann['score'] == best


def test_cap_per_class():
    labels = [1] * 15 + [2] * 4 + [3] * 11
    keep = CapPerClass(k=10).keep('fov.png', _anns(labels))
    counts = np.bincount(np.asarray(labels)[keep], minlength=4)[1:]
    assert counts.tolist() == [10, 4, 10]
    assert set(range(15, 19)) <= set(keep.tolist())  # small classes untouched
    assert CapPerClass(k=10).keep('fov.png', []).size == 0


@pytest.mark.parametrize('scheme', [KeepPerPatch(k=1), CapPerClass(k=1)])
def test_ignored_regions_are_never_drawn_and_always_stay(scheme):
    anns = _anns([1, 2, 1, 2, 1])
    for i in (0, 3):
        anns[i]['iscrowd'] = 1
    drawn = []
    for key in range(40):
        keep = scheme.keep(f'tile{key}.png', anns).tolist()
        assert {0, 3} <= set(keep)
        drawn.append(tuple(sorted(set(keep) - {0, 3})))
    if isinstance(scheme, KeepPerPatch):
        assert {d for d in drawn} == {(1,), (2,), (4,)}
    else:  # one of class 1 (2 or 4) and the only cell of class 2 (1)
        assert {d for d in drawn} == {(1, 2), (1, 4)}


def test_subset_keeps_only_flagged_annotations_then_applies_the_scheme():
    original = [True, False, True, False, False, True]
    scheme = KeepPerPatch(k=1, subset='original')
    chosen = [scheme.keep(f'tupac{i}.png', _anns([1] * 6, original=original)).tolist()
              for i in range(600)]
    assert all(len(keep) == 1 for keep in chosen)
    frequencies = np.bincount([keep[0] for keep in chosen], minlength=6) / 600
    np.testing.assert_allclose(frequencies, np.array(original) / 3, atol=0.06)
    # k larger than the flagged annotations: exactly the flagged ones stay
    assert KeepPerPatch(k=5, subset='original').keep(
        'a.png', _anns([1] * 6, original=original)).tolist() == [0, 2, 5]
    assert KeepPerPatch(k=1, subset='original').keep(
        'a.png', _anns([1, 1], original=[False, 0])).size == 0
    capped = CapPerClass(k=1, subset='original').keep(
        'a.png', _anns([1, 1, 2, 2, 3], original=[1, 1, 0, 1, 0]))
    assert np.asarray([1, 1, 2, 2, 3])[capped].tolist() == [1, 2]
    with pytest.raises(ValueError, match="annotation 1 of image a.png has no 'original'"):
        scheme.keep('a.png', _anns([1]))


def test_subset_deletion_is_seeded_and_equal_in_export():
    coco = _coco([4, 6, 1, 0, 5], seed=3)
    for i, ann in enumerate(coco['annotations']):
        ann['original'] = i % 3 != 0
    cfg = dict(type='KeepPerPatch', k=1, subset='original', seed=5)
    kept = delete_from_coco(coco, cfg)
    assert all(ann['original'] for ann in kept['annotations'])
    flagged = {ann['image_id'] for ann in coco['annotations'] if ann['original']}
    assert sorted(ann['image_id'] for ann in kept['annotations']) == sorted(flagged)
    assert _kept_ids(delete_from_coco(coco, cfg)) == _kept_ids(kept)
    scheme = build_deletion(cfg)
    for image in coco['images']:
        anns = [a for a in coco['annotations'] if a['image_id'] == image['id']]
        expected = [a['id'] for a in kept['annotations'] if a['image_id'] == image['id']]
        assert [anns[i]['id'] for i in scheme.keep(image['file_name'], anns)] == expected


def test_tupac_original_keep1_config():
    scheme = build_deletion(delete.load_scheme_config('tupac_original_keep1')[0])
    assert isinstance(scheme, KeepPerPatch)
    assert (scheme.k, scheme.order, scheme.subset) == (1, 'random', 'original')


@pytest.mark.parametrize('cfg', [dict(type='KeepPerPatch', k=0),
                                 dict(type='KeepPerPatch', order='agreement'),
                                 dict(type='CapPerClass', k=2.5),
                                 dict(type='KeepPerPatch', subset=''),
                                 dict(type='CapPerClass', subset=['original']),
                                 dict(type='KeepRegion', size=0)])
def test_bad_configs_raise(cfg):
    with pytest.raises(ValueError):
        build_deletion(cfg)


def test_keep_region_keeps_every_cell_of_one_area_and_none_outside():
    # a 4 x 4 grid of 10 px cells, centres 30 px apart: a 64 px area holds 2 x 2 or 3 x 3
    xy = [(x, y) for y in range(10, 130, 30) for x in range(10, 130, 30)]
    anns = _anns([1] * 16, bbox=[[x - 5, y - 5, 10, 10] for x, y in xy])
    scheme = KeepRegion(size=64, seed=3)
    for key in ('a.png', 'b.png', 'c.png'):
        kept = scheme.keep(key, anns)
        centres = np.array(xy)[kept]
        assert len(kept) >= 1
        assert np.ptp(centres, axis=0).max() <= 64  # inside one 64 px square
        anchor = centres.mean(axis=0)
        around = [i for i, c in enumerate(xy) if np.abs(np.array(c) - anchor).max() < 15]
        assert set(around) <= set(kept)
        np.testing.assert_array_equal(kept, scheme.keep(key, anns))  # seeded per image
    assert len(KeepRegion(size=1000).keep('a.png', anns)) == 16
    assert len(scheme.keep('empty.png', [])) == 0


def test_build_deletion():
    assert build_deletion(None) is None
    scheme = build_deletion(dict(type='CapPerClass', k=3, seed=4))
    assert isinstance(scheme, CapPerClass) and (scheme.k, scheme.seed) == (3, 4)


def test_delete_cli_exports_and_reports(tmp_path, capsys):
    coco = _coco([1, 1, 1, 3], classes=1)
    src = tmp_path / 'train.json'
    src.write_text(json.dumps(coco))
    out = tmp_path / 'incomplete' / 'train.json'
    delete.main([str(src), '--scheme', 'keep1_random', '--out', str(out)])
    text = capsys.readouterr().out
    assert 'kept      4 of      6 (66.7 %)' in text and 'MITOS-ATYPIA-14 ~73 %' in text
    assert len(json.loads(out.read_text())['annotations']) == 4
    assert json.loads(src.read_text()) == coco  # input untouched

    cfg = tmp_path / 'cap.py'
    cfg.write_text("deletion = dict(type='CapPerClass', k=2)\n")
    delete.main([str(src), '--cfg', str(cfg), '--out', str(out)])
    assert len(json.loads(out.read_text())['annotations']) == 5
    with pytest.raises(FileNotFoundError, match='keep3_sometimes.py not found'):
        delete.main([str(src), '--scheme', 'keep3_sometimes', '--out', str(out)])
    with pytest.raises(ValueError, match='--out must differ'):
        delete.main([str(src), '--scheme', 'keep1_random', '--out', str(src)])
