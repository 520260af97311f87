"""The paired bootstrap of two detectors' validation dumps (mmdet_pu.evaluation.
paired_bootstrap): which ranks a class's labeled cells better, and how often."""
import json

import pytest

from mmdet_pu.evaluation.paired_bootstrap import compare_ap
from mmdet_pu.evaluation.rates import average_precision


def _dump(path, images, classes=('a', 'b')):
    """A per-image dump as CellDetMetric writes it: per image the ranked detections and
    the cells per class (tp + fn)."""
    entries = []
    for index, (scores, labels, matched, cells) in enumerate(images):
        entries.append(dict(img_id=index, img_path=f'img{index}.png', tp=[0] * len(cells),
                            fn=list(cells), detections=dict(scores=scores, labels=labels,
                                                            matched=matched)))
    path.write_text(json.dumps(dict(classes=list(classes), images=entries)))
    return str(path)


def test_the_detector_that_ranks_the_labeled_cells_first_wins_every_resample(tmp_path):
    # on every image: one labeled cell of class a, one look-alike; detector b ranks the
    # cell first, detector a the look-alike; class b's detections are identical
    images_a = [([0.9, 0.6, 0.5], [0, 0, 1], [False, True, True], [1, 1])] * 6
    images_b = [([0.9, 0.6, 0.5], [0, 0, 1], [True, False, True], [1, 1])] * 6
    first = compare_ap(_dump(tmp_path / 'a.json', images_a),
                       _dump(tmp_path / 'b.json', images_b), resamples=50)
    assert first[0].ap_a == pytest.approx(average_precision([0.9, 0.6] * 6,
                                                            [False, True] * 6, 6))
    assert first[0].ap_b == pytest.approx(1.0) and first[0].b_better == 1.0
    # a tie is no win
    assert first[1].ap_a == first[1].ap_b == pytest.approx(1.0)
    assert first[1].b_better == 0.0


def test_a_resample_counts_a_detection_as_often_as_its_image_was_drawn(tmp_path):
    # b is better on image 0 only and worse on image 1: it wins the resamples that
    # draw image 0 more often than image 1
    images_a = [([0.9, 0.8], [0, 0], [False, True], [1]),
                ([0.9, 0.8], [0, 0], [True, False], [1])]
    images_b = [([0.9, 0.8], [0, 0], [True, False], [1]),
                ([0.9, 0.8], [0, 0], [False, True], [1])]
    shares = [compare_ap(_dump(tmp_path / 'a.json', images_a, ('a',)),
                         _dump(tmp_path / 'b.json', images_b, ('a',)), resamples=400,
                         seed=seed)[0].b_better for seed in (0, 1)]
    # draws of two images: (0, 0) 1/4 wins, (1, 1) 1/4 loses, mixed 1/2 tie
    assert all(0.15 < share < 0.35 for share in shares)


def test_dumps_of_other_images_or_classes_are_refused(tmp_path):
    one = [([0.5], [0], [True], [1, 0])]
    a = _dump(tmp_path / 'a.json', one)
    other = tmp_path / 'b.json'
    _dump(other, one)
    report = json.loads(other.read_text())
    report['images'][0]['img_path'] = 'elsewhere.png'
    other.write_text(json.dumps(report))
    with pytest.raises(ValueError, match='hold other images'):
        compare_ap(a, str(other))
    with pytest.raises(ValueError, match=r"classes \['x', 'y'\], expected those of"):
        compare_ap(a, _dump(tmp_path / 'c.json', one, ('x', 'y')))
    with pytest.raises(ValueError, match='resamples must be >= 1'):
        compare_ap(a, a, resamples=0)
