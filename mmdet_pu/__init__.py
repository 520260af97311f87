"""mmdet_pu: positive-unlabeled learning for cell detection with MMDetection 3.x.

Importing the package registers every module in mmdet's registries, so configs only
need ``custom_imports = dict(imports=['mmdet_pu'], allow_failed_imports=False)``. An
mmcv installed without its compiled ops runs on the torch stand-ins of
:mod:`.ops_fallback`.
"""
from . import ops_fallback  # noqa: F401  (must run before mmcv's ops are imported)
from . import compat  # noqa: F401  (must run before any checkpoint is loaded)
from . import datasets, engine, evaluation, models  # noqa: F401

__version__ = '0.1.0'
