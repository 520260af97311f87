from .prior_update_hook import PriorUpdateHook

__all__ = ['PriorUpdateHook']
