from .bde_bbox_head import BDEShared2FCBBoxHead

__all__ = ['BDEShared2FCBBoxHead']
