import pytest

from data_prep.splits import split_groups

SLIDES = ['03', '04', '05', '07', '10', '11', '12', '14', '15', '17', '18']


def test_five_folds_with_a_fixed_validation_set():
    splits = split_groups(SLIDES, seed=0, n_folds=5)
    assert len(splits['val']) == 2 and len(splits['folds']) == 5
    rest = set(SLIDES) - set(splits['val'])
    tests = [g for fold in splits['folds'] for g in fold['test']]
    assert sorted(tests) == sorted(rest)                  # each one tested exactly once
    for fold in splits['folds']:
        assert set(fold['train']) | set(fold['test']) == rest
        assert not set(fold['train']) & set(fold['test'])
        assert len(fold['test']) in (1, 2)
    for group, per_fold in splits['assignment'].items():
        assert len(per_fold) == 5
        assert (per_fold == ['val'] * 5) == (group in splits['val'])


def test_plain_split_is_4_1_1():
    groups = [f'img{i}' for i in range(100)]
    splits = split_groups(groups, n_folds=1)
    fold = splits['folds'][0]
    assert (len(fold['train']), len(splits['val']), len(fold['test'])) == (66, 17, 17)
    assert set(splits['assignment']) == set(groups)


def test_deterministic_by_seed_and_independent_of_order():
    groups = [f'case{i:02d}' for i in range(1, 24)]
    first = split_groups(groups, seed=3)
    assert split_groups(list(reversed(groups)) + groups[:5], seed=3) == first
    assert split_groups(groups, seed=4)['assignment'] != first['assignment']


@pytest.mark.parametrize('kwargs', [
    dict(groups=['a', 'b', 'c'], n_folds=5),                 # too few groups
    dict(groups=[str(i) for i in range(30)], ratios=(3, 1, 1), n_folds=5),
    dict(groups=[str(i) for i in range(30)], ratios=(4, 0, 1), n_folds=1),
])
def test_bad_requests_raise(kwargs):
    with pytest.raises(ValueError):
        split_groups(**kwargs)
