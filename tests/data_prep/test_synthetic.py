import hashlib
import json
import time

import numpy as np
import pytest

from data_prep import prepare
from data_prep.synthetic import generate_image, nucleus_types, slot_spacing


def test_generation_is_fast_enough():
    generate_image(np.random.default_rng(0), 256)  # warm-up
    start = time.perf_counter()
    for index in range(40):
        generate_image(np.random.default_rng([0, index]), 256, 'binary')
    rate = 40 / (time.perf_counter() - start)
    assert rate >= 20, f'{rate:.1f} images of 256 px per second'


@pytest.mark.parametrize('variant', ['binary', 'multi'])
def test_deterministic_by_seed(variant):
    first = generate_image(np.random.default_rng([1, 7]), 256, variant)
    again = generate_image(np.random.default_rng([1, 7]), 256, variant)
    other = generate_image(np.random.default_rng([2, 7]), 256, variant)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other[0])


def test_binary_cells_are_dense_dark_and_boxed():
    counts, mitosis, background = [], [], []
    for index in range(10):
        rgb, boxes, labels, scores = generate_image(np.random.default_rng([0, index]), 256)
        counts.append(len(boxes))
        assert (labels == 1).all() and ((0.5 <= scores) & (scores <= 1)).all()
        assert ((boxes[:, 2:] >= 12) & (boxes[:, 2:] <= 30)).all()
        assert (boxes[:, :2] >= 0).all() and (boxes[:, :2] + boxes[:, 2:] <= 256).all()
        grey = rgb.mean(2)
        inside = np.zeros(grey.shape, bool)
        for x, y, w, h in boxes.astype(int):
            cx, cy = x + w // 2, y + h // 2
            mitosis.append(grey[cy - 2:cy + 3, cx - 2:cx + 3].mean())
            inside[y:y + h, x:x + w] = True
        background.append(np.median(grey[~inside]))
    assert 8 <= np.mean(counts) <= 20   # keep-1 deletion removes most annotations
    assert np.mean(mitosis) < np.mean(background) - 60  # dark nuclei on pale stroma


def test_multi_variant_has_all_three_classes():
    labels = np.concatenate([generate_image(np.random.default_rng([0, i]), 256, 'multi')[2]
                             for i in range(5)])
    assert set(np.unique(labels)) == {1, 2, 3}


def test_prepare_cli_writes_the_layout(tmp_path, capsys):
    out = tmp_path / 'syn'
    summary = prepare.main(['synthetic', '--out', str(out), '--variant', 'multi',
                            '--num-images', '6', '--size', '256', '--tile', '128',
                            '--no-progress'])
    assert 'fold0 train' in capsys.readouterr().out
    assert summary['images'] == 6 and summary['tile_images'] == 6 * 4
    names = {p.name for p in (out / 'annotations' / 'fold0').iterdir()}
    assert names == {'train.json', 'val.json', 'test.json', 'test_whole.json'}
    whole = json.loads((out / 'annotations' / 'fold0' / 'test_whole.json').read_text())
    assert [c['name'] for c in whole['categories']] == ['tumor', 'lymphocyte', 'stromal']
    assert len(whole['images']) == 1 and len(whole['images'][0]['tiles']) == 4
    assert whole['images'][0]['mpp'] == 0.5  # the resolution the images stand for
    splits = json.loads((out / 'splits.json').read_text())
    assert sorted(splits['assignment']) == [f'multi_{i:04d}.png' for i in range(6)]
    options = json.loads((out / 'prepare.json').read_text())  # what made this folder
    assert options['dataset'] == 'synthetic' and options['variant'] == 'multi'
    assert (options['tile'], options['num_images'], options['out']) == (128, 6, str(out))
    assert 'progress' not in options and 'overwrite' not in options
    # the same image index gives the same image whatever --num-images is
    other = tmp_path / 'more'
    prepare.main(['synthetic', '--out', str(other), '--variant', 'multi',
                  '--num-images', '8', '--size', '256', '--tile', '128', '--no-progress'])
    tile = 'tiles/multi_0000_x128_y0.png'
    assert (out / 'images' / tile).read_bytes() == (other / 'images' / tile).read_bytes()


def test_regime_options_change_one_look_at_a_time():
    def cells(kinds, variant='binary', n=6):
        out = [generate_image(np.random.default_rng([0, i]), 256, variant, kinds)
               for i in range(n)]
        return np.concatenate([o[1] for o in out]), len(out)

    boxes, n = cells(nucleus_types('binary', cells_per_tile=(2, 5)))
    assert 1 <= len(boxes) / n <= 6  # sparse
    boxes, n = cells(nucleus_types('nuclei'), 'nuclei')
    assert len(boxes) / n >= 30  # dense: every nucleus is a cell
    boxes, _ = cells(nucleus_types('binary', cell_size=(28, 40)))
    assert np.median(boxes[:, 2:].max(axis=1)) >= 28
    boxes, _ = cells(nucleus_types('binary', cell_size=(12, 16)))
    assert boxes[:, 2:].max() <= 22
    assert [k.per_tile for k in nucleus_types('binary', lookalikes=3)][1:] == \
        [(24, 42), (9, 21)]
    assert len(nucleus_types('nuclei', lookalikes=1)) == 3
    with pytest.raises(ValueError, match='cells_per_tile: the multi variant has 3'):
        nucleus_types('multi', cells_per_tile=(1, 2))
    with pytest.raises(ValueError, match='cell_size: expected 0 < low <= high'):
        nucleus_types('binary', cell_size=(20, 10))


@pytest.mark.parametrize('variant, digest', [('binary', '5d560255f4f16767'),
                                             ('multi', '5601487f906c7413')])
def test_default_looks_are_unchanged_by_the_regime_options(variant, digest):
    """Without options every variant draws the cells it drew before the regime options
    existed (the demo's data): a digest of the boxes, labels and scores of one image."""
    _, boxes, labels, scores = generate_image(np.random.default_rng([0, 3]), 256, variant)
    data = np.round(boxes, 6).tobytes() + labels.tobytes() + np.round(scores, 6).tobytes()
    assert hashlib.sha256(data).hexdigest()[:16] == digest
    assert slot_spacing(nucleus_types('binary')) == slot_spacing(nucleus_types('multi')) \
        == 26
    assert slot_spacing(nucleus_types('binary', cell_size=(28, 40))) == 46
