from .bde import bde_weights, box_centres, l1_diameter, mean_l1_distance
from .pu_loss import (BasePULoss, MultiPULoss, PULoss, cross_entropy_terms,
                      pu_risk)
from .roi_focal_loss import RoIFocalLoss

__all__ = [
    'BasePULoss', 'PULoss', 'MultiPULoss', 'cross_entropy_terms', 'pu_risk',
    'bde_weights', 'box_centres', 'l1_diameter', 'mean_l1_distance', 'RoIFocalLoss',
]
