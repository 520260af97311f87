from .pu_rpn_head import PURPNHead

__all__ = ['PURPNHead']
from .bde_rpn_head import BDERPNHead  # noqa: E402

__all__ += ['BDERPNHead']
