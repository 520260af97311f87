from .box_fusion import fuse_detections
from .fused_ensemble import FusedEnsemble

__all__ = ['FusedEnsemble', 'fuse_detections']
