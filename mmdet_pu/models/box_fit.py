"""Box-fit negatives (docs/method.md#box-fit-negatives): which samples are wrong boxes of
a labeled cell. Shared by the RoI head (``BoxFitShared2FCBBoxHead``) and the dense heads
(``BatchClsLossMixin``)."""
from typing import Optional

from torch import Tensor


def check_box_fit_args(iou: float, cover: Optional[float], weight: float,
                       owner: str) -> None:
    """Raise a ValueError naming ``owner``'s argument unless ``0 < iou < 1``, ``cover``
    is None or in (0, 1], and ``weight >= 0``."""
    if not 0 < iou < 1:
        raise ValueError(f'{owner}.box_fit_iou: expected 0 < box_fit_iou < 1, got {iou!r}')
    if cover is not None and not 0 < cover <= 1:
        raise ValueError(f'{owner}.box_fit_cover: expected 0 < box_fit_cover <= 1, '
                         f'got {cover!r}')
    if not weight >= 0:
        raise ValueError(f'{owner}.box_fit_weight: expected box_fit_weight >= 0, '
                         f'got {weight!r}')


def box_fit_rule(max_iou: Tensor, max_cover: Tensor, iou: float,
                 cover: Optional[float]) -> Tensor:
    """True for a sample whose largest IoU with a labeled box is ``>= iou`` or that covers
    ``>= cover`` of a labeled box's area (``max_cover``: max_g |r ∩ g| / |g|); the caller
    keeps the negatives (samples that are no positive) among them."""
    selected = max_iou >= iou
    if cover is not None:
        selected |= max_cover >= cover
    return selected
