from .relative_step import RelativeMultiStepLR

__all__ = ['RelativeMultiStepLR']
