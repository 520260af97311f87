"""Cell datasets and incomplete-annotation (deletion) schemes."""
from .cell_coco import CellCocoDataset
from .deletion import (CapPerClass, DeletionScheme, KeepPerPatch, KeepRegion,
                       apply_deletion, build_deletion, delete_from_coco)
from .transforms import PackCellInputs

__all__ = ['CellCocoDataset', 'DeletionScheme', 'KeepPerPatch', 'KeepRegion', 'CapPerClass',
           'apply_deletion', 'build_deletion', 'delete_from_coco', 'PackCellInputs']
