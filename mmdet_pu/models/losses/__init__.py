from .bde import bde_weights, box_centres, l1_diameter, mean_l1_distance
from .dense_pu_loss import (DensePULoss, FocalPULoss, QualityFocalPULoss,
                            focal_terms, quality_focal_terms)
from .pu_loss import (BasePULoss, MultiPULoss, PULoss, check_prior, check_priors,
                      check_risk_options, cross_entropy_terms, pu_risk)
from .recalibration_loss import BackgroundRecalibrationLoss, recalibrated_focal_terms
from .roi_focal_loss import RoIFocalLoss

__all__ = [
    'BasePULoss', 'PULoss', 'MultiPULoss', 'cross_entropy_terms', 'pu_risk',
    'check_prior', 'check_priors', 'check_risk_options', 'DensePULoss', 'FocalPULoss',
    'QualityFocalPULoss', 'focal_terms', 'quality_focal_terms',
    'bde_weights', 'box_centres', 'l1_diameter', 'mean_l1_distance', 'RoIFocalLoss',
    'BackgroundRecalibrationLoss', 'recalibrated_focal_terms',
]
