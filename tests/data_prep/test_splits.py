import pytest

from data_prep.splits import compile_group_regex, fold_ratios, group_of, split_groups

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


@pytest.mark.parametrize('n_folds', [2, 3, 4, 5, 7])
def test_fold_ratios_fit_any_fold_count_with_a_sixth_validating(n_folds, recwarn):
    groups = [f'g{i:02d}' for i in range(30)]
    splits = split_groups(groups, ratios=fold_ratios(n_folds), n_folds=n_folds)
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]
    assert len(splits['val']) == 5 and len(splits['folds']) == n_folds
    tests = sorted(g for fold in splits['folds'] for g in fold['test'])
    assert tests == sorted(set(groups) - set(splits['val']))  # each tested exactly once


def test_fold_ratios_of_one_and_five_folds_are_the_papers():
    assert fold_ratios(1) == fold_ratios(5) == (4, 1, 1)
    with pytest.raises(ValueError, match='n_folds must be >= 1, got 0'):
        fold_ratios(0)


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


def test_three_groups_split_one_each_with_a_warning():
    with pytest.warns(UserWarning, match=r'3 groups are too few for a 4:1:1 .* using '
                                         r'1:1:1 instead \(1 train, 1 val, 1 test'):
        splits = split_groups(['s1', 's2', 's3'], n_folds=1)
    fold = splits['folds'][0]
    assert (len(fold['train']), len(splits['val']), len(fold['test'])) == (1, 1, 1)
    assert sorted(fold['train'] + splits['val'] + fold['test']) == ['s1', 's2', 's3']


@pytest.mark.parametrize('n, n_folds, needed', [(2, 1, 3), (0, 1, 3), (5, 5, 6), (3, 3, 4)])
def test_too_few_groups_say_how_many_are_needed(n, n_folds, needed):
    ratios = (n_folds - 1, 1, 1) if n_folds > 1 else (4, 1, 1)
    with pytest.raises(ValueError, match=rf'at least {needed} groups .*there are {n}\b'):
        split_groups([f'g{i}' for i in range(n)], ratios=ratios, n_folds=n_folds)


@pytest.mark.parametrize('n, n_folds', [(4, 1), (6, 1), (6, 5), (11, 5)])
def test_enough_groups_split_by_the_ratios_without_warning(n, n_folds, recwarn):
    splits = split_groups([f'g{i}' for i in range(n)], n_folds=n_folds)
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]
    assert len(splits['val']) == (1 if n < 9 else 2)
    for fold in splits['folds']:
        assert fold['train'] and fold['test']


def test_folds_shrink_a_large_validation_share_with_a_warning():
    # 1:9:1 of 8 groups rounds to 7 validation groups, leaving 1 group for 2 test folds
    with pytest.warns(UserWarning, match=r'8 groups are too few for 2 folds at 1:9:1: '
                                         r'using 6 validation group\(s\) instead of 7'):
        splits = split_groups([f'g{i}' for i in range(8)], ratios=(1, 9, 1), n_folds=2)
    assert len(splits['val']) == 6
    assert [len(f['test']) for f in splits['folds']] == [1, 1]


@pytest.mark.parametrize('regex, key', [
    (r'^(slide\d+)_', 'slide12'),                # the first group
    (r'^slide\d+', 'slide12'),                   # no group: the whole match
    (r'(?:case(\d+))?_(x\d)', None),             # a first group that takes no part
    (None, 'slide12_x3.png'),                    # no regex: each image its own group
])
def test_group_regex_gives_the_first_group_else_the_whole_match(regex, key):
    pattern = compile_group_regex(regex)
    if key is None:
        with pytest.raises(ValueError, match=r"its first group in the image path "
                                             r"'slide12_x3\.png' is empty"):
            group_of('slide12_x3.png', pattern)
    else:
        assert group_of('slide12_x3.png', pattern) == key


def test_group_regex_errors_name_the_option():
    with pytest.raises(ValueError, match=r"^--group-regex 'slide\(' is not a valid"):
        compile_group_regex('slide(')
    with pytest.raises(ValueError, match=r"^--group-regex 'case' does not match the "
                                         r"image path 'slide1\.png'"):
        group_of('slide1.png', compile_group_regex('case'))
