from .overlap_sampler import OverlapRandomSampler

__all__ = ['OverlapRandomSampler']
