from .pu_loss import (BasePULoss, MultiPULoss, PULoss, cross_entropy_terms,
                      pu_risk)

__all__ = [
    'BasePULoss', 'PULoss', 'MultiPULoss', 'cross_entropy_terms', 'pu_risk',
]
from .bde import bde_weights, box_centres, l1_diameter, mean_l1_distance  # noqa: E402
from .roi_focal_loss import RoIFocalLoss  # noqa: E402

__all__ += ['bde_weights', 'box_centres', 'l1_diameter', 'mean_l1_distance', 'RoIFocalLoss']
