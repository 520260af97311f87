"""Registries that mmdet has no equivalent for.

Everything else registers directly into mmdet's registries (``mmdet.registry``).
"""
from mmengine.registry import Registry

#: Incomplete-annotation protocols (``KeepPerPatch``, ``CapPerClass``, ...).
DELETION_SCHEMES = Registry('deletion scheme', locations=['mmdet_pu.datasets'])
