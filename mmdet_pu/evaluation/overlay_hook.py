"""Hook writing TP / FP / FN overlays of every test image (``tools/test.py --show-dir``)."""
import os.path as osp
from typing import Optional, Sequence

import mmcv
from mmengine.hooks import Hook
from mmengine.logging import print_log

from mmdet.registry import HOOKS
from mmdet.structures import DetDataSample
from .matching import to_numpy
from .overlay import STYLES, render_cell_overlays, save_cell_overlays


@HOOKS.register_module()
class CellOverlayHook(Hook):
    """Draw TP (green), FP (red) and FN (yellow) of each test image, one PNG per class.

    It works after any test loop, including :class:`TiledTestLoop` (then on the whole
    images). Matching follows :class:`CellDetMetric`; pass it the metric's settings.

    Args:
        out_dir (str): output folder; a relative path is placed under
            ``<work_dir>/<timestamp>/`` like mmdet's ``DetVisualizationHook``.
        score_thr (float): detections below are not drawn. Defaults to 0.5.
        iou_thr (float): matching IoU threshold. Defaults to 0.5.
        radius (float, optional): centre-distance matching radius in pixels.
        style (str): ``'box'`` (default) or ``'dot'`` (box centres, for crowded images).
        interval (int): draw every ``interval``-th test batch, >= 1. Defaults to 1.
    """

    priority = 'LOW'

    def __init__(self, out_dir: str = 'overlays', score_thr: float = 0.5,
                 iou_thr: float = 0.5, radius: Optional[float] = None,
                 style: str = 'box', interval: int = 1) -> None:
        if style not in STYLES:
            raise ValueError(f'CellOverlayHook: style must be one of {STYLES}, got '
                             f'{style!r}')
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
            raise ValueError(f'CellOverlayHook: interval must be an integer >= 1 (draw '
                             f'every interval-th test batch), got {interval!r}')
        self.out_dir = out_dir
        self.interval = interval
        #: how the overlays match and draw (the keywords of ``render_cell_overlays``)
        self.drawing = dict(score_thr=score_thr, iou_thr=iou_thr, radius=radius,
                            style=style)
        self._resolved_dir = None

    def before_test(self, runner) -> None:
        self._resolved_dir = (self.out_dir if osp.isabs(self.out_dir) else osp.join(
            runner.work_dir, runner.timestamp, self.out_dir))
        print_log(f'CellOverlayHook: writing TP/FP/FN overlays to {self._resolved_dir}',
                  logger='current')

    def after_test_iter(self, runner, batch_idx: int, data_batch: dict,
                        outputs: Sequence[DetDataSample]) -> None:
        if batch_idx % self.interval:
            return
        classes = runner.test_evaluator.dataset_meta['classes']
        for sample in outputs:
            image = mmcv.imread(sample.img_path)  # BGR, as cv2 writes
            pred, gt = sample.pred_instances, sample.gt_instances
            overlays = render_cell_overlays(
                image, to_numpy(pred.bboxes), to_numpy(pred.scores),
                to_numpy(pred.labels), to_numpy(gt.bboxes), to_numpy(gt.labels),
                classes, **self.drawing)
            save_cell_overlays(self._resolved_dir, sample.img_path, overlays)


def add_overlay_hook(cfg, out_dir: str, style: str = 'box') -> None:
    """Append a :class:`CellOverlayHook` to ``cfg.custom_hooks`` (``--show-dir``).

    The matching settings are those of the ``CellDetMetric`` in ``cfg.test_evaluator``
    when there is one (so the overlays show what the metric counted), the metric's
    defaults otherwise.
    """
    evaluators = cfg.get('test_evaluator', None) or []
    evaluators = evaluators if isinstance(evaluators, (list, tuple)) else [evaluators]
    metric = next((e for e in evaluators
                   if str(e.get('type', '')).split('.')[-1] == 'CellDetMetric'), {})
    hook = dict(type='CellOverlayHook', out_dir=out_dir, style=style,
                score_thr=metric.get('score_thr', 0.5),
                iou_thr=metric.get('iou_thr', 0.5), radius=metric.get('radius', None))
    cfg.custom_hooks = list(cfg.get('custom_hooks', None) or []) + [hook]
