from .prior_update_hook import PriorUpdateHook
from .pu_correction_logger_hook import PUCorrectionLoggerHook

__all__ = ['PriorUpdateHook', 'PUCorrectionLoggerHook']
