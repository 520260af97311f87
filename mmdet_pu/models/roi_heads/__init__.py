from .bde_bbox_head import BDEShared2FCBBoxHead
from .box_fit_bbox_head import BoxFitShared2FCBBoxHead
from .soft_targets import SoftTargetMixin

__all__ = ['BDEShared2FCBBoxHead', 'BoxFitShared2FCBBoxHead', 'SoftTargetMixin']
