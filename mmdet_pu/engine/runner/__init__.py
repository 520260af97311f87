from .tile_merge import merge_tile_predictions, tile_windows
from .tiled_loop import TiledTestLoop, TiledValLoop

__all__ = ['TiledTestLoop', 'TiledValLoop', 'merge_tile_predictions', 'tile_windows']
