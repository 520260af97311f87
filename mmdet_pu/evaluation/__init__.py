from .cell_metric import CellDetMetric, detection_rates
from .matching import ImageMatch, count_per_class, match_image
from .overlay import render_cell_overlays, save_cell_overlays
from .overlay_hook import CellOverlayHook, add_overlay_hook
from .statistics import (benjamini_hochberg, mean_std, paired_ttest,
                         significance_stars)

__all__ = [
    'CellDetMetric', 'detection_rates', 'ImageMatch', 'match_image', 'count_per_class',
    'render_cell_overlays', 'save_cell_overlays', 'CellOverlayHook', 'add_overlay_hook',
    'benjamini_hochberg', 'mean_std', 'paired_ttest', 'significance_stars'
]
