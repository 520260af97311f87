"""mmcv's compiled ops that mmdet_pu's detectors need, written in torch, for an mmcv
installed without them (``MMCV_OPS=torch make setup``; README, GPU).

mmcv 2.1.0 publishes no CUDA wheel for current torch, and building its ops needs the CUDA
compiler of the torch build. Without them ``import mmcv.ops`` fails: every op module
asks ``mmcv._ext`` (the compiled library) for its functions when it is imported. This
module is a stand-in for ``mmcv._ext``: :func:`install`, which importing the module
calls (``import mmdet_pu`` imports it first), puts it in ``sys.modules`` before mmcv's
ops are imported, when the compiled library is missing (or ``MMDET_PU_TORCH_OPS=1`` asks
for it). It runs on any device torch runs on and implements,
with the compiled library's signatures and results:

* ``nms``: greedy non-maximum suppression (IoU strictly above the threshold suppresses;
  ``offset`` adds to widths and heights as mmcv's does): Faster R-CNN's RPN proposals,
  the RoI head's detections and the tiled inference's merge (``batched_nms``);
* ``roi_align_forward`` / ``roi_align_backward``, average pooling: the RoI head's
  features (``RoIAlign``, ``sampling_ratio`` 0 or fixed, ``aligned`` or not);
* ``sigmoid_focal_loss_forward`` / ``sigmoid_focal_loss_backward``: mmdet's ``FocalLoss``
  on CUDA tensors (RetinaNet, ATSS, FCOS baselines).

Any other op of mmcv (deformable convolutions, rotated boxes, ...) raises a
``RuntimeError`` that names it and how to build mmcv with its ops. RoI align is
separable: each sample point's bilinear weight is the product of a weight along y and
one along x (zero where the point lies outside the map, mmcv's rule), so a bin's mean is
``A_y I A_x^T`` with per-RoI interpolation matrices ``A_y`` (output rows x map rows) and
``A_x``; the backward pass is the transpose, ``A_y^T dO A_x``.
"""
import importlib.machinery
import importlib.util
import os
import sys
import types
from typing import Optional, Tuple

import torch
from torch import Tensor

#: The environment variable that makes :func:`install` use these ops even where mmcv's
#: compiled ones exist (to compare them).
FORCE_ENV = 'MMDET_PU_TORCH_OPS'
#: Where mmcv looks for its compiled ops.
EXT_MODULE = 'mmcv._ext'
#: RoIs pooled together in :func:`roi_align_forward` (bounds the memory of one step).
ROI_CHUNK = 128
#: Boxes whose pairwise IoU :func:`nms` computes at once.
NMS_BLOCK = 4096


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float, offset: int = 0) -> Tensor:
    """Indices of the boxes kept by greedy NMS, in descending score: a box is dropped
    when its IoU with a kept, higher-scored box exceeds ``iou_threshold``."""
    if boxes.numel() == 0:
        return boxes.new_zeros(0, dtype=torch.long)
    order = scores.argsort(descending=True, stable=True)
    sorted_boxes = boxes[order].float()
    keep = torch.zeros(len(order), dtype=torch.bool)
    kept = sorted_boxes.new_zeros((0, 4))
    for start in range(0, len(order), NMS_BLOCK):
        block = sorted_boxes[start:start + NMS_BLOCK]
        alive = torch.ones(len(block), dtype=torch.bool, device=boxes.device)
        for k in range(0, len(kept), NMS_BLOCK):
            alive &= ~(_iou(block, kept[k:k + NMS_BLOCK], offset) > iou_threshold).any(1)
        over = (_iou(block, block, offset) > iou_threshold).cpu().numpy()
        alive = alive.cpu().numpy()
        for i in range(len(block)):
            if alive[i]:
                alive[i + 1:] &= ~over[i, i + 1:]
        alive = torch.from_numpy(alive)
        keep[start:start + len(block)] = alive
        kept = torch.cat([kept, block[alive.to(block.device)]])
    return order[keep.to(order.device)]


def _iou(a: Tensor, b: Tensor, offset: int) -> Tensor:
    """Pairwise IoU of boxes ``a`` (n, 4) and ``b`` (m, 4) as mmcv's NMS computes it."""
    area_a = (a[:, 2] - a[:, 0] + offset) * (a[:, 3] - a[:, 1] + offset)
    area_b = (b[:, 2] - b[:, 0] + offset) * (b[:, 3] - b[:, 1] + offset)
    wh = (torch.min(a[:, None, 2:], b[None, :, 2:]) - torch.max(a[:, None, :2], b[None, :, :2])
          + offset).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (area_a[:, None] + area_b[None, :] - inter)


def _axis_weights(start: Tensor, size: Tensor, pooled: int, grid: Tensor,
                  length: int) -> Tensor:
    """Per-RoI interpolation matrix along one axis, (rois, pooled, length): row p sums
    the bilinear weights of bin p's ``grid`` sample points over the map's ``length``
    cells (mmcv's rules: a point beyond -1 or ``length`` weighs nothing, one in
    (-1, 0] reads cell 0, one past the last cell reads the last)."""
    bin_size = size / pooled
    most = max(int(grid.max().item()) if grid.numel() else 1, 1)
    steps = torch.arange(most, device=start.device, dtype=start.dtype)
    bins = torch.arange(pooled, device=start.device, dtype=start.dtype)
    grid_f = grid.to(start.dtype).clamp(min=1)[:, None, None]
    pos = (start[:, None, None] + bins[None, :, None] * bin_size[:, None, None]
           + (steps[None, None, :] + 0.5) * bin_size[:, None, None] / grid_f)
    used = (steps[None, None, :] < grid[:, None, None]) & (pos >= -1.0) & (pos <= length)
    pos = pos.clamp(min=0)
    low = pos.floor().long()
    last = low >= length - 1
    low = torch.where(last, torch.full_like(low, length - 1), low)
    pos = torch.where(last, low.to(pos.dtype), pos)
    high = torch.where(last, low, low + 1)
    frac = pos - low.to(pos.dtype)
    weights = pos.new_zeros((len(start), pooled, length))
    used_f = used.to(pos.dtype)
    weights.scatter_add_(2, low, (1 - frac) * used_f)
    weights.scatter_add_(2, high, frac * used_f)
    return weights


def _roi_matrices(rois: Tensor, out_h: int, out_w: int, spatial_scale: float,
                  sampling_ratio: int, aligned: bool, height: int,
                  width: int) -> Tuple[Tensor, Tensor, Tensor]:
    """``(A_y, A_x, count)`` of ``rois`` (module docstring): the axis matrices and the
    number of sample points of each RoI's bins (at least 1, as mmcv's)."""
    shift = 0.5 if aligned else 0.0
    x1, y1, x2, y2 = (rois[:, i] * spatial_scale - shift for i in range(1, 5))
    roi_w, roi_h = x2 - x1, y2 - y1
    if not aligned:
        roi_w, roi_h = roi_w.clamp(min=1.0), roi_h.clamp(min=1.0)
    if sampling_ratio > 0:
        grid_h = torch.full_like(roi_h, sampling_ratio, dtype=torch.long)
        grid_w = torch.full_like(roi_w, sampling_ratio, dtype=torch.long)
    else:
        grid_h = torch.ceil(roi_h / out_h).long()
        grid_w = torch.ceil(roi_w / out_w).long()
    count = (grid_h * grid_w).clamp(min=1).to(rois.dtype)
    return (_axis_weights(y1, roi_h, out_h, grid_h, height),
            _axis_weights(x1, roi_w, out_w, grid_w, width), count)


def _check_avg(pool_mode: int) -> None:
    if pool_mode != 1:
        raise RuntimeError('RoIAlign with pool_mode="max" has no torch fallback in '
                           'mmdet_pu.ops_fallback; use pool_mode="avg" (mmdet\'s default) '
                           'or build mmcv with its ops (README, GPU)')


def _roi_steps(rois: Tensor, options: dict, height: int, width: int, dtype):
    """``(image index, positions, A_y, A_x, count)`` for ``rois`` by image, in chunks of
    at most :data:`ROI_CHUNK` RoIs (bounds the memory of one step); ``options``: the
    pooling arguments of mmcv's ``roi_align_forward``."""
    _check_avg(options['pool_mode'])
    images = rois[:, 0].long()
    for b in images.unique().tolist():
        on_image = (images == b).nonzero().flatten()
        for start in range(0, len(on_image), ROI_CHUNK):
            positions = on_image[start:start + ROI_CHUNK]
            a_y, a_x, count = _roi_matrices(
                rois[positions], options['aligned_height'], options['aligned_width'],
                options['spatial_scale'], options['sampling_ratio'], options['aligned'],
                height, width)
            yield b, positions, a_y.to(dtype), a_x.to(dtype), count.to(dtype)


def roi_align_forward(input: Tensor, rois: Tensor, output: Tensor, argmax_y: Tensor,
                      argmax_x: Tensor, **options) -> None:
    """mmcv's ``roi_align_forward``: the average of each bin's bilinear samples of
    ``input`` (B, C, H, W) for ``rois`` (n, 5: batch index, x1, y1, x2, y2), written
    into ``output`` (n, C, aligned_height, aligned_width); ``options``: mmcv's
    ``aligned_height``, ``aligned_width``, ``spatial_scale``, ``sampling_ratio``,
    ``pool_mode`` (1, average) and ``aligned``."""
    channels, height, width = input.shape[1:]
    out_h, out_w = options['aligned_height'], options['aligned_width']
    for b, positions, a_y, a_x, count in _roi_steps(rois, options, height, width,
                                                    input.dtype):
        n = len(positions)
        rows = (a_y.reshape(n * out_h, height)
                @ input[b].permute(1, 0, 2).reshape(height, channels * width))
        pooled = (rows.reshape(n, out_h * channels, width) @ a_x.transpose(1, 2))
        output[positions] = (pooled.reshape(n, out_h, channels, out_w).permute(0, 2, 1, 3)
                             / count[:, None, None, None])


def roi_align_backward(grad_output: Tensor, rois: Tensor, argmax_y: Tensor,
                       argmax_x: Tensor, grad_input: Tensor, **options) -> None:
    """mmcv's ``roi_align_backward``: the gradient of :func:`roi_align_forward` with
    respect to its input, added into ``grad_input`` (B, C, H, W)."""
    channels, height, width = grad_input.shape[1:]
    out_h, out_w = options['aligned_height'], options['aligned_width']
    for b, positions, a_y, a_x, count in _roi_steps(rois, options, height, width,
                                                    grad_input.dtype):
        n = len(positions)
        grad = grad_output[positions] / count[:, None, None, None]
        cols = (grad.reshape(n, channels * out_h, out_w) @ a_x).reshape(
            n, channels, out_h, width)
        cols = cols.permute(0, 2, 1, 3).reshape(n * out_h, channels * width)
        image = a_y.reshape(n * out_h, height).t() @ cols
        grad_input[b] += image.reshape(height, channels, width).permute(1, 0, 2)


def _focal_terms(input: Tensor, target: Tensor, weight: Tensor, gamma: float,
                 alpha: float, grad: bool) -> Tensor:
    """Elementwise sigmoid focal loss of mmcv's kernel, or its derivative in the logit
    (``grad``); class ``target[n]`` is the positive of row n (none where it equals the
    number of classes), ``weight`` (empty or one per class) scales row n by its
    target's weight."""
    tiny = torch.finfo(input.dtype).tiny
    p = torch.sigmoid(input)
    log_p, log_q = p.clamp(min=tiny).log(), (1 - p).clamp(min=tiny).log()
    positive = target[:, None] == torch.arange(input.size(1), device=input.device)[None]
    if grad:
        term_p = (1 - p).pow(gamma) * (1 - p - gamma * p * log_p)
        term_n = p.pow(gamma) * (gamma * (1 - p) * log_q - p)
    else:
        term_p = (1 - p).pow(gamma) * log_p
        term_n = p.pow(gamma) * log_q
    value = torch.where(positive, -alpha * term_p, -(1 - alpha) * term_n)
    if weight.numel():
        value = value * weight[target.clamp(max=weight.numel() - 1)][:, None]
    return value


def sigmoid_focal_loss_forward(input: Tensor, target: Tensor, weight: Tensor,
                               output: Tensor, gamma: float, alpha: float) -> None:
    """mmcv's ``sigmoid_focal_loss_forward``, written into ``output``."""
    output.copy_(_focal_terms(input, target, weight, gamma, alpha, grad=False))


def sigmoid_focal_loss_backward(input: Tensor, target: Tensor, weight: Tensor,
                                grad_input: Tensor, gamma: float, alpha: float) -> None:
    """mmcv's ``sigmoid_focal_loss_backward``, written into ``grad_input``."""
    grad_input.copy_(_focal_terms(input, target, weight, gamma, alpha, grad=True))


class TorchExt(types.ModuleType):
    """The stand-in for ``mmcv._ext``: the ops above, and for every other name a
    function that raises (mmcv's op modules only check, when imported, that the names
    exist)."""

    IMPLEMENTED = ('nms', 'roi_align_forward', 'roi_align_backward',
                   'sigmoid_focal_loss_forward', 'sigmoid_focal_loss_backward')

    def __init__(self):
        super().__init__(EXT_MODULE, 'torch stand-ins for mmcv ops (mmdet_pu.ops_fallback)')
        # no loader: what asks for one (mmengine's mmcv_full_available) sees no compiled
        # library
        self.__spec__ = importlib.machinery.ModuleSpec(EXT_MODULE, None)
        module = sys.modules[__name__]
        for name in self.IMPLEMENTED:
            setattr(self, name, getattr(module, name))

    def __getattr__(self, name: str):
        if name.startswith('__'):
            raise AttributeError(name)

        def missing(*args, **kwargs):
            raise RuntimeError(
                f'mmcv op {name!r} has no torch fallback in mmdet_pu.ops_fallback (it '
                f'implements {", ".join(self.IMPLEMENTED)}); build mmcv with its ops: '
                'README, GPU')
        return missing


def compiled_ops_present() -> bool:
    """Whether mmcv's compiled library is installed."""
    try:
        return importlib.util.find_spec(EXT_MODULE) is not None
    except ModuleNotFoundError:  # mmcv itself is missing
        return False


def install(force: Optional[bool] = None) -> bool:
    """Put :class:`TorchExt` in place of ``mmcv._ext`` when mmcv has no compiled ops
    (``force``: whatever it has; None reads :data:`FORCE_ENV`). Returns whether the
    stand-in is in use.

    Raises:
        RuntimeError: the stand-in is asked for after mmcv's ops were imported with the
            compiled library.
    """
    if force is None:
        force = os.environ.get(FORCE_ENV, '') not in ('', '0')
    current = sys.modules.get(EXT_MODULE)
    if isinstance(current, TorchExt):
        return True
    if not force and (current is not None or compiled_ops_present()):
        return False
    if current is not None:
        raise RuntimeError(f'{FORCE_ENV}: mmcv\'s compiled ops were imported already; '
                           'set it before the first import of mmdet_pu or mmcv.ops')
    sys.modules[EXT_MODULE] = TorchExt()
    return True


def in_use() -> bool:
    """Whether mmcv's ops run on :class:`TorchExt`."""
    return isinstance(sys.modules.get(EXT_MODULE), TorchExt)


install()
