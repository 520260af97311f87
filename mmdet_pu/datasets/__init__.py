"""Cell datasets and incomplete-annotation (deletion) schemes."""
from .cell_coco import CellCocoDataset
from .deletion import (CapPerClass, DeletionScheme, KeepPerPatch, apply_deletion,
                       build_deletion, delete_from_coco)

__all__ = ['CellCocoDataset', 'DeletionScheme', 'KeepPerPatch', 'CapPerClass',
           'apply_deletion', 'build_deletion', 'delete_from_coco']
