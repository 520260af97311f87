from .bde_rpn_head import BDERPNHead
from .pu_rpn_head import PURPNHead

__all__ = ['BDERPNHead', 'PURPNHead']
