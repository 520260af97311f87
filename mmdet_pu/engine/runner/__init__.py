from .cell_runner import CellRunner
from .tile_merge import merge_tile_predictions
from .tiled_loop import TiledTestLoop, TiledValLoop

__all__ = ['CellRunner', 'TiledTestLoop', 'TiledValLoop', 'merge_tile_predictions']
