"""Seeded train/val/test splits by group (slide, case or image).

The paper splits 4:1:1 by slide/case/image and, for MITOS-ATYPIA-14 and CRCHisto, runs
5-fold cross-validation with a fixed validation set (Section 3.1): one sixth of the
groups is the validation set of every fold, the other groups are cut into 5 parts and
fold ``k`` tests on part ``k`` and trains on the other four (4:1:1 again).
:func:`fold_ratios` gives the ratios of any number of folds with that validation share.

Small datasets: every split needs at least one group, so a plain split needs 3 groups
and ``n`` folds need ``n + 1`` (one validation group and one test group per fold); fewer
raise a ``ValueError`` saying so. When the ratios would leave a split empty although
there are enough groups (3 groups at 4:1:1 round to 2:0:1), each empty split gets one
group, taken from the largest one (3 groups split 1:1:1), with a warning that gives the
split used.

The group of an image comes from the ``--group-regex`` option of the converters that
take one (:func:`compile_group_regex`, :func:`group_of`).
"""
import re
import warnings

import numpy as np

SPLITS = ('train', 'val', 'test')
#: ``(train, val, test)`` of the paper's plain split and of its 5 folds.
PLAIN_RATIOS = (4, 1, 1)


def fold_ratios(n_folds):
    """``(train, val, test)`` ratios of :func:`split_groups` for ``n_folds`` folds.

    One fold is the plain 4:1:1 split. ``K > 1`` folds give ``(K - 1, K / 5, 1)``: the
    validation set keeps the paper's sixth of the groups whatever ``K`` and fold ``k``
    tests on the ``k``-th of ``K`` parts of the other five sixths (5 folds: 4:1:1).

    Raises:
        ValueError: ``n_folds < 1``.
    """
    if n_folds < 1:
        raise ValueError(f'n_folds must be >= 1, got {n_folds}')
    if n_folds == 1:
        return PLAIN_RATIOS
    return (n_folds - 1, n_folds / 5, 1)


def split_groups(groups, ratios=PLAIN_RATIOS, seed=0, n_folds=5):
    """Assign groups to train/val/test, deterministically by ``seed``.

    Args:
        groups: group keys (duplicates are ignored; the input order does not matter).
        ratios: ``(train, val, test)`` proportions. With ``n_folds > 1`` the test share
            is one fold of the non-validation groups, so ``train`` must equal
            ``(n_folds - 1) * test`` (:func:`fold_ratios` gives such ratios).
        seed: seed of the permutation.
        n_folds: number of cross-validation folds; 1 gives a single plain split.

    Returns:
        dict with ``seed``, ``ratios``, ``n_folds``, ``val`` (sorted list, the same for
        every fold), ``folds`` (list of ``n_folds`` dicts with sorted ``train`` and
        ``test`` lists) and ``assignment`` (``{group: [split of fold 0, fold 1, ...]}``).

    Raises:
        ValueError: bad ratios or fold count, or fewer groups than the split needs.
    """
    ratios = tuple(float(r) for r in ratios)
    if len(ratios) != 3 or min(ratios) <= 0:
        raise ValueError(f'ratios must be three positive numbers (train, val, test), '
                         f'got {ratios}')
    if n_folds < 1:
        raise ValueError(f'n_folds must be >= 1, got {n_folds}')
    if n_folds > 1 and not np.isclose(ratios[0], (n_folds - 1) * ratios[2]):
        raise ValueError(f'with {n_folds} folds each test fold is 1/{n_folds} of the '
                         f'non-validation groups, so ratios must be ({n_folds - 1}t, v, t);'
                         f' got {ratios}')
    unique = sorted(set(map(str, groups)))
    order = [unique[i] for i in np.random.default_rng(seed).permutation(len(unique))]
    n_val, n_test = _split_sizes(len(order), ratios, n_folds)
    val, rest = order[:n_val], order[n_val:]
    if n_folds == 1:
        parts = [rest[:n_test]]
    else:
        parts = [list(p) for p in np.array_split(np.array(rest, dtype=object), n_folds)]
    folds = [dict(train=sorted(set(rest) - set(test)), test=sorted(test)) for test in parts]
    assignment = {group: [] for group in unique}
    for fold in folds:
        for split, members in (('train', fold['train']), ('val', val),
                               ('test', fold['test'])):
            for group in members:
                assignment[group].append(split)
    return dict(seed=seed, ratios=list(ratios), n_folds=n_folds, val=sorted(val),
                folds=folds, assignment=assignment)


def _ratio_text(ratios):
    return ':'.join(f'{r:g}' for r in ratios)


def _split_sizes(n, ratios, n_folds):
    """Numbers of validation and test groups (``n_test`` only counts for one fold).

    The shares are rounded as always; a share that would leave a split empty is raised to
    one group, taken from the largest other share, with a warning.
    """
    total = sum(ratios)
    n_val = int(round(n * ratios[1] / total))
    n_test = int(round(n * ratios[2] / total))
    if n_folds == 1:
        if n < 3:
            raise ValueError(f'a {_ratio_text(ratios)} train/val/test split needs at least '
                             f'3 groups (one per split); there are {n}')
        val, test = max(n_val, 1), max(n_test, 1)
        while n - val - test < 1:  # give train its group from the larger of val/test
            if val >= test:
                val -= 1
            else:
                test -= 1
        if (val, test) != (n_val, n_test):
            warnings.warn(f'{n} groups are too few for a {_ratio_text(ratios)} train/val/'
                          f'test split (it would leave a split empty); using '
                          f'{n - val - test}:{val}:{test} instead ({n - val - test} train, '
                          f'{val} val, {test} test group(s))', stacklevel=3)
        return val, test
    if n < n_folds + 1:
        raise ValueError(f'{n_folds} folds need at least {n_folds + 1} groups (1 '
                         f'validation group and 1 test group per fold); there are {n}. '
                         'Use fewer folds (--n-folds).')
    val = min(max(n_val, 1), n - n_folds)
    if val != n_val:
        warnings.warn(f'{n} groups are too few for {n_folds} folds at '
                      f'{_ratio_text(ratios)}: using {val} validation group(s) instead of '
                      f'{n_val}, so that every fold has a validation group and tests at '
                      f'least one group ({n - val} groups in {n_folds} test folds)',
                      stacklevel=3)
    return val, None


def split_by_patterns(groups, val_pattern, test_patterns):
    """Folds given by regular expressions on the group keys (held-out sets).

    Fold ``k`` tests on the groups that ``test_patterns[k]`` matches (``re.search``),
    validates on the other groups that ``val_pattern`` matches and trains on the rest:
    a fold's test images come from groups its training never saw, e.g. a cell line or a
    microscope held out.

    Returns:
        the dict of :func:`split_groups` (``folds`` with ``train``, ``val`` and ``test``
        per fold, ``assignment``), with ``val_pattern`` and ``test_patterns`` in place
        of ``seed`` and ``ratios``.

    Raises:
        ValueError: an invalid expression, or a fold left without train, val or test
            groups (the message names the fold and its expressions).
    """
    unique = sorted(set(map(str, groups)))
    val_re = compile_pattern(val_pattern, 'validation')
    folds = []
    for k, pattern in enumerate(test_patterns):
        test_re = compile_pattern(pattern, f'fold {k} test')
        test = [g for g in unique if test_re.search(g)]
        val = [g for g in unique if g not in test and val_re.search(g)]
        train = [g for g in unique if g not in test and g not in val]
        for split, members in (('test', test), ('val', val), ('train', train)):
            if not members:
                raise ValueError(f'fold {k} (test {pattern!r}, validation {val_pattern!r}) '
                                 f'has no {split} group among {unique}')
        folds.append(dict(train=train, val=val, test=test))
    if not folds:
        raise ValueError('give at least one test pattern (one fold each)')
    assignment = {group: [next(split for split in SPLITS if group in fold[split])
                          for fold in folds] for group in unique}
    return dict(val_pattern=val_pattern, test_patterns=list(test_patterns),
                n_folds=len(folds), folds=folds, assignment=assignment)


def compile_pattern(pattern, what):
    """``re.compile(pattern)``; a ValueError naming ``what`` if it is invalid."""
    try:
        return re.compile(pattern)
    except re.error as err:
        raise ValueError(f'{what} {pattern!r} is not a valid regular expression '
                         f'({err})') from None


def compile_group_regex(text):
    """The pattern of a ``--group-regex`` option, ``None`` without one."""
    return None if text is None else compile_pattern(text, '--group-regex')


def group_of(source, pattern):
    r"""The split key (group) of the image at relative path ``source``.

    The first capture group of ``pattern`` searched in ``source`` (``^(slide\d+)_``), or
    its whole match when ``pattern`` has no group (``^slide\d+``); ``source`` itself
    without a pattern (each image its own group).

    Raises:
        ValueError: ``pattern`` does not match ``source``, or gives it an empty key.
    """
    if pattern is None:
        return source
    match = pattern.search(source)
    if match is None:
        raise ValueError(f'--group-regex {pattern.pattern!r} does not match the image '
                         f'path {source!r}')
    key = match.group(1 if pattern.groups else 0)
    if not key:
        part = 'first group' if pattern.groups else 'match'
        raise ValueError(f'--group-regex {pattern.pattern!r}: its {part} in the image path '
                         f'{source!r} is empty; expected a non-empty split key')
    return key
