from .cell_runner import CellRunner
from .config_text import OnceFormattedConfig
from .tile_merge import merge_tile_predictions
from .tiled_loop import TiledTestLoop, TiledValLoop

__all__ = ['CellRunner', 'OnceFormattedConfig', 'TiledTestLoop', 'TiledValLoop',
           'merge_tile_predictions']
