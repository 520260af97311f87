from .prior_update_hook import PriorUpdateHook
from .pu_correction_logger_hook import PUCorrectionLoggerHook
from .resumable_checkpoint_hook import ResumableCheckpointHook

__all__ = ['PriorUpdateHook', 'PUCorrectionLoggerHook', 'ResumableCheckpointHook']
