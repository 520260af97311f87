"""Box density weights of the BDE baseline (Li et al., MICCAI 2020), a reconstruction.

BDE ("box density energy") calibrates the cross entropy of a detector trained on
sparse annotations: an unlabeled sample lying where the detector predicts many boxes
is probably an unannotated object, so its "background" loss is down-weighted. No
official code exists; this is the reconstruction documented in
docs/method.md#bde-reconstruction. For one image
with predicted (regressed) box centres ``c_1 .. c_N`` the weight of sample ``i`` is

    E_i = mean_j ||c_i - c_j||_1 / max_{j,k} ||c_j - c_k||_1        (in [0, 1])

small inside dense clusters of boxes, large for isolated boxes. The heads
(``BDERPNHead``, ``BDEShared2FCBBoxHead``) multiply the ``label_weight`` of every
unlabeled sample by ``E_i``; positives keep weight 1.

Both terms are computed without the O(N^2) distance matrix: the mean L1 distance
separates into one mean absolute difference per axis, read off sorted coordinates
and prefix sums (O(N log N)), and the L1 diameter of a point set is
``max(range(x + y), range(x - y))`` (O(N)).
"""
from typing import Optional

import torch
from torch import Tensor

__all__ = ['box_centres', 'mean_l1_distance', 'l1_diameter', 'bde_weights']


def box_centres(boxes: Tensor) -> Tensor:
    """Centres ``(N, 2)`` of boxes ``(N, 4)`` in ``(x1, y1, x2, y2)`` format."""
    return (boxes[:, :2] + boxes[:, 2:4]) / 2


def _mean_abs_difference(query: Tensor, reference: Tensor) -> Tensor:
    """``mean_j |q_i - r_j|`` for 1-D ``query (M,)`` and ``reference (N,)``."""
    ref, _ = torch.sort(reference)
    zero = ref.new_zeros(1)
    prefix = torch.cat([zero, torch.cumsum(ref, 0)])  # prefix[k] = sum of k smallest
    below = torch.searchsorted(ref, query, right=True)  # r_j <= q_i
    sum_below = prefix[below]
    num = ref.numel()
    total = prefix[-1]
    return (query * below - sum_below + (total - sum_below)
            - query * (num - below)) / num


def mean_l1_distance(query: Tensor, reference: Tensor) -> Tensor:
    """Mean L1 distance from each query point to all reference points.

    Args:
        query (Tensor): Points ``(M, 2)``.
        reference (Tensor): Points ``(N, 2)``, N >= 1.

    Returns:
        Tensor: ``(M,)``, ``mean_j ||q_i - r_j||_1``.
    """
    query = query.double()
    reference = reference.double()
    return (_mean_abs_difference(query[:, 0], reference[:, 0])
            + _mean_abs_difference(query[:, 1], reference[:, 1]))


def l1_diameter(points: Tensor) -> Tensor:
    """Largest L1 distance between two of the points ``(N, 2)``, N >= 1.

    ``|dx| + |dy| = max(|dx + dy|, |dx - dy|)``, so the diameter is the larger
    range of the rotated coordinates ``x + y`` and ``x - y``.
    """
    points = points.double()
    diagonals = torch.stack([points[:, 0] + points[:, 1],
                             points[:, 0] - points[:, 1]], dim=1)
    return (diagonals.max(0).values - diagonals.min(0).values).max()


@torch.no_grad()
def bde_weights(query: Tensor, reference: Optional[Tensor] = None) -> Tensor:
    """BDE loss weights ``E_i`` of the query centres w.r.t. one image's box centres.

    Args:
        query (Tensor): Centres ``(M, 2)`` of the samples to weight.
        reference (Tensor, optional): Centres ``(N, 2)`` of all boxes the detector
            predicts in the same image (the query usually belongs to it). Defaults
            to ``query``.

    Returns:
        Tensor: ``(M,)`` weights in ``[0, 1]`` with ``query``'s dtype. When all
        reference centres coincide (diameter 0) the density carries no information
        and every weight is 1, i.e. plain cross entropy. A query outside the
        reference set can be farther than the diameter; its weight is clipped to 1.
    """
    if reference is None:
        reference = query
    if query.dim() != 2 or query.size(1) != 2 or reference.dim() != 2 \
            or reference.size(1) != 2:
        raise ValueError('bde_weights expects centres of shape (M, 2) and (N, 2), '
                         f'got {tuple(query.shape)} and {tuple(reference.shape)}')
    if reference.size(0) == 0:
        raise ValueError('bde_weights needs at least one reference centre')
    diameter = l1_diameter(reference)
    if diameter <= 0:
        return query.new_ones(query.size(0))
    weights = mean_l1_distance(query, reference) / diameter
    return weights.clamp(0, 1).to(query.dtype)
