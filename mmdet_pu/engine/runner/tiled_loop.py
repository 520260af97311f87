"""Whole-image evaluation by tiled inference, as MMEngine test/val loops
(docs/method.md#tiled-inference).

The dataloader yields whole images. Each one is cut into ``tile_size`` windows (stride
``tile_size - overlap``, last window flush with the border:
:func:`~cellio.tiling.window_grid`), the windows are run through
the model's ``test_step`` (its data preprocessor normalises and pads every tile, so a
plain checkpoint is used unchanged), the boxes are shifted back to image coordinates,
each tile keeps the detections centred in its core (the tile less half the overlap
along each shared edge, :func:`~.tile_merge.tile_cores`) and the rest are merged with
NMS, class-wise by default (docs/method.md#tiled-inference) or across classes
(``class_agnostic=True``: a
nucleus has one type, so of two overlapping boxes of different classes one is a false
positive). The evaluator and the ``after_{test,val}_iter`` hooks (e.g.
``DetVisualizationHook`` for ``--show-dir``) then receive one data sample per whole image,
carrying its ground truth and the merged ``pred_instances``. A
:class:`~mmdet_pu.models.detectors.FusedEnsemble` is run member by member: each
member's tiles are merged as one detector's, then the members' whole-image detections
are fused (docs/method.md#fused-ensemble). With ``flips`` every model (every member)
also predicts the mirrored tiles, and its views are fused before the members are
(:mod:`.test_flips`).

Select it in a config::

    test_cfg = dict(type='TiledTestLoop', tile_size=500, overlap=100, nms_iou=0.3)

``nms_iou`` should equal the model's ``test_cfg.rcnn.nms.iou_threshold`` so that images
no larger than one tile are left as the model predicted them.
"""
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch
from mmengine.evaluator import Evaluator
from mmengine.model import is_model_wrapper
from mmengine.runner import TestLoop, ValLoop, autocast
from mmengine.structures import InstanceData
from torch.utils.data import DataLoader

from mmdet.registry import LOOPS
from mmdet.structures import DetDataSample
from cellio.tiling import window_grid
from ...models.detectors import FusedEnsemble
from ...models.detectors.box_fusion import fuse_instances
from .test_flips import check_flips, flip_back, flip_tile
from .tile_merge import merge_tile_predictions, tile_cores


#: An ensemble's fusion of its members' detections of one image.
FuseFn = Callable[[Sequence[InstanceData]], InstanceData]


def prediction_steps(model, stage: str = 'test') -> Tuple[List[Callable], Optional[FuseFn]]:
    """How a model predicts: ``([model.<stage>_step], None)`` for one detector;
    ``([member.<stage>_step, ...], fuse)`` for a
    :class:`~mmdet_pu.models.detectors.FusedEnsemble` (also wrapped), whose members
    predict one by one and whose ``fuse`` combines their detections of one image. The
    tiled loops and slide inference (:mod:`mmdet_pu.apis.slide`) run both alike."""
    module = model.module if is_model_wrapper(model) else model
    if isinstance(module, FusedEnsemble):
        return [getattr(member, f'{stage}_step') for member in module.members], module.fuse
    return [getattr(model, f'{stage}_step')], None


class TiledInferenceMixin:
    """Predicts one whole image from its tiles; shared by the test and val loops.

    Args:
        tile_size (int): side of the square tiles in input pixels (the packed image;
            equal to original pixels when the test pipeline does not resize).
        overlap (int): overlap of neighbouring tiles in pixels, ``0 <= overlap <
            tile_size``; at least the largest cell, so that a cell cut by one tile's
            edge is whole in the neighbour's core. Defaults to 0.
        nms_iou (float): IoU threshold of the NMS merging the tiles. Defaults to 0.3
            (docs/method.md#tiled-inference).
        class_agnostic (bool): merge with one NMS over all classes instead of one per
            class; pair it with ``class_agnostic=True`` in the model's
            ``test_cfg.rcnn.nms``. Defaults to False (docs/method.md#tiled-inference).
        tile_batch_size (int): tiles per forward pass. Defaults to 8.
        max_per_img (int): cap on the merged detections per image; -1 (default) keeps
            all, each tile being capped by the model's ``test_cfg``.
        flips (Sequence[str]): test-time flips: each tile is also predicted mirrored in
            each of these directions (``'horizontal'``, ``'vertical'``, ``'diagonal'``)
            and the views' whole-image detections are fused (:mod:`.test_flips`;
            ``tools/test.py --tta`` sets all three). Defaults to none.

    The loop class sets ``stage`` (``'test'`` or ``'val'``): it selects the model's
    ``<stage>_step`` and the ``before/after_<stage>_iter`` hooks. The other arguments
    (``runner``, ``dataloader``, ``evaluator``, ``fp16``) are the mmengine loop's.
    """

    def __init__(self, runner, dataloader: Union[DataLoader, Dict],
                 evaluator: Union[Evaluator, Dict, List], tile_size: int,
                 overlap: int = 0, nms_iou: float = 0.3, class_agnostic: bool = False,
                 tile_batch_size: int = 8, max_per_img: int = -1,
                 flips: Sequence[str] = (), fp16: bool = False) -> None:
        super().__init__(runner, dataloader, evaluator, fp16=fp16)
        self._init_tiling(tile_size, overlap, nms_iou, class_agnostic, tile_batch_size,
                          max_per_img, flips)

    def _init_tiling(self, tile_size: int, overlap: int = 0, nms_iou: float = 0.3,
                     class_agnostic: bool = False, tile_batch_size: int = 8,
                     max_per_img: int = -1, flips: Sequence[str] = ()) -> None:
        """Check and keep the tiling arguments (tiling without a runner calls it alone,
        e.g. ``benchmarks/tiled_inference_throughput.py``)."""
        name = type(self).__name__
        if not (isinstance(tile_size, int) and tile_size > 0):
            raise ValueError(f'{name}: tile_size must be a positive int, got {tile_size!r}')
        self.tile_size = tile_size
        if not 0 <= overlap < tile_size:
            raise ValueError(f'{name}: overlap must be in [0, tile_size={tile_size}), got '
                             f'{overlap!r}')
        self.overlap = overlap
        if not 0 < nms_iou <= 1:
            raise ValueError(f'{name}: nms_iou must be in (0, 1], got {nms_iou!r}')
        self.nms_iou = nms_iou
        if tile_batch_size < 1:
            raise ValueError(f'{name}: tile_batch_size must be >= 1, got '
                             f'{tile_batch_size!r}')
        self.tile_batch_size = tile_batch_size
        self.class_agnostic = class_agnostic
        self.max_per_img = max_per_img
        self.flips = check_flips(flips, name)

    def predict_tiled(self, steps: Sequence[Callable], data_batch: dict,
                      fuse: Optional[FuseFn] = None) -> List[DetDataSample]:
        """Tiled prediction of every image of a dataloader batch.

        Args:
            steps: the model's ``test_step`` or ``val_step``, or with ``fuse`` one per
                member of an ensemble (:func:`prediction_steps`).
            data_batch: ``dict(inputs=[CHW uint8 tensor, ...], data_samples=[...])``.
            fuse: the ensemble's fusion of its members' whole-image detections
                (:meth:`~mmdet_pu.models.detectors.FusedEnsemble.fuse`).

        Returns:
            The batch's data samples with ``pred_instances`` of the whole images.
        """
        for image, sample in zip(data_batch['inputs'], data_batch['data_samples']):
            merged = [self._predict_image(member_step, image, sample)
                      for member_step in steps]
            sample.pred_instances = merged[0] if fuse is None else self._capped(
                fuse(merged))
        return data_batch['data_samples']

    def _capped(self, pred: InstanceData) -> InstanceData:
        return pred[:self.max_per_img] if self.max_per_img > 0 else pred

    def _predict_image(self, step, image: torch.Tensor,
                       sample: DetDataSample) -> InstanceData:
        """The detections of one whole image by one model, its tiles merged; with
        ``flips``, the views' whole-image detections fused (:mod:`.test_flips`)."""
        views = [self._predict_view(step, image, sample, flip)
                 for flip in (None, *self.flips)]
        return views[0] if len(views) == 1 else self._capped(fuse_instances(views))

    def _predict_view(self, step, image: torch.Tensor, sample: DetDataSample,
                      flip: Optional[str]) -> InstanceData:
        """One view of the image (``flip``: None for the tiles as they are), its tiles'
        detections in the image's coordinates, merged."""
        height, width = image.shape[-2:]
        windows = window_grid(width, height, self.tile_size, self.overlap)
        # Boxes come back rescaled to the original image (rescale=True); so must offsets
        # and cores.
        scale_w, scale_h = sample.metainfo.get('scale_factor', (1.0, 1.0))
        cores = [(x_low / scale_w, y_low / scale_h, x_high / scale_w, y_high / scale_h)
                 for x_low, y_low, x_high, y_high in tile_cores(windows)]
        tile_preds, offsets = [], []
        for start in range(0, len(windows), self.tile_batch_size):
            chunk = windows[start:start + self.tile_batch_size]
            tiles, tile_samples = [], []
            for x0, y0, w, h in chunk:
                tile = image[..., y0:y0 + h, x0:x0 + w]
                tiles.append(tile if flip is None else flip_tile(tile, flip))
                tile_samples.append(DetDataSample(metainfo=dict(
                    sample.metainfo, img_shape=(h, w),
                    ori_shape=(round(h / scale_h), round(w / scale_w)))))
                offsets.append((x0 / scale_w, y0 / scale_h))
            outputs = step(dict(inputs=tiles, data_samples=tile_samples))
            for (_, _, w, h), out in zip(chunk, outputs):
                pred = out.pred_instances
                tile_preds.append(pred if flip is None else flip_back(
                    pred, flip, h / scale_h, w / scale_w))
        return merge_tile_predictions(
            tile_preds, offsets, nms_iou=self.nms_iou,
            class_agnostic=self.class_agnostic, max_per_img=self.max_per_img,
            cores=cores)

    @torch.no_grad()
    def run_iter(self, idx: int, data_batch: dict) -> None:
        """One dataloader batch: tiled prediction, evaluation and the stage's hooks."""
        stage = self.stage
        self.runner.call_hook(f'before_{stage}_iter', batch_idx=idx, data_batch=data_batch)
        steps, fuse = prediction_steps(self.runner.model, stage)
        with autocast(enabled=self.fp16):
            outputs = self.predict_tiled(steps, data_batch, fuse=fuse)
        self.evaluator.process(data_samples=outputs, data_batch=data_batch)
        self.runner.call_hook(f'after_{stage}_iter', batch_idx=idx, data_batch=data_batch,
                              outputs=outputs)


@LOOPS.register_module()
class TiledTestLoop(TiledInferenceMixin, TestLoop):
    """``TestLoop`` that predicts whole images tile by tile and merges with NMS
    (arguments: :class:`TiledInferenceMixin`)."""
    stage = 'test'


@LOOPS.register_module()
class TiledValLoop(TiledInferenceMixin, ValLoop):
    """``ValLoop`` counterpart of :class:`TiledTestLoop` (validation on whole images)."""
    stage = 'val'
