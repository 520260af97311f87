from .base_pu_loss import (BasePULoss, check_prior, check_priors, nonnegative_risk,
                           pu_risk_terms)
from .bde import bde_weights, box_centres, l1_diameter, mean_l1_distance
from .dense_pu_loss import (DensePULoss, FocalPULoss, QualityFocalPULoss,
                            focal_terms, quality_focal_terms)
from .pu_loss import MultiPULoss, PULoss, cross_entropy_terms
from .recalibration_loss import BackgroundRecalibrationLoss, recalibrated_focal_terms
from .roi_focal_loss import RoIFocalLoss
from .unknown_class_loss import UnknownClassCELoss

__all__ = [
    'BasePULoss', 'pu_risk_terms', 'nonnegative_risk', 'check_prior', 'check_priors',
    'PULoss', 'MultiPULoss',
    'cross_entropy_terms', 'DensePULoss', 'FocalPULoss', 'QualityFocalPULoss',
    'focal_terms', 'quality_focal_terms', 'bde_weights', 'box_centres', 'l1_diameter',
    'mean_l1_distance', 'RoIFocalLoss', 'BackgroundRecalibrationLoss',
    'recalibrated_focal_terms', 'UnknownClassCELoss',
]
