"""Seeded train/val/test splits by group (slide, case or image).

The paper splits 4:1:1 by slide/case/image and, for MITOS-ATYPIA-14 and CRCHisto, runs
5-fold cross-validation with a fixed validation set (Section 3.1): one sixth of the
groups is the validation set of every fold, the other groups are cut into 5 parts and
fold ``k`` tests on part ``k`` and trains on the other four (4:1:1 again).
"""
import numpy as np

SPLITS = ('train', 'val', 'test')


def split_groups(groups, ratios=(4, 1, 1), seed=0, n_folds=5):
    """Assign groups to train/val/test, deterministically by ``seed``.

    Args:
        groups: group keys (duplicates are ignored; the input order does not matter).
        ratios: ``(train, val, test)`` proportions. With ``n_folds > 1`` the test share
            is one fold of the non-validation groups, so ``train`` must equal
            ``(n_folds - 1) * test``.
        seed: seed of the permutation.
        n_folds: number of cross-validation folds; 1 gives a single plain split.

    Returns:
        dict with ``seed``, ``ratios``, ``n_folds``, ``val`` (sorted list, the same for
        every fold), ``folds`` (list of ``n_folds`` dicts with sorted ``train`` and
        ``test`` lists) and ``assignment`` (``{group: [split of fold 0, fold 1, ...]}``).
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
    n = len(order)
    n_val = int(round(n * ratios[1] / sum(ratios)))
    n_test = int(round(n * ratios[2] / sum(ratios)))
    if n_val < 1 or n - n_val < max(n_folds, 2) or (n_folds == 1 and n_test < 1):
        raise ValueError(f'{n} groups are too few for a {ratios} split with {n_folds} '
                         f'fold(s): every split needs at least one group')
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
