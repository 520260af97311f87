from .batch_cls_loss import BatchClsLossMixin
from .bde_rpn_head import BDERPNHead
from .pu_atss_head import PUATSSHead
from .pu_fcos_head import PUFCOSHead
from .pu_gfl_head import PUGFLHead
from .pu_retina_head import PURetinaHead
from .pu_rpn_head import PURPNHead
from .pu_rtmdet_head import PURTMDetHead, PURTMDetSepBNHead

__all__ = [
    'BatchClsLossMixin', 'BDERPNHead', 'PUATSSHead', 'PUFCOSHead', 'PUGFLHead',
    'PURetinaHead', 'PURPNHead', 'PURTMDetHead', 'PURTMDetSepBNHead',
]
