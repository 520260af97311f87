"""Several trainings of one detector as one model, their detections fused
(docs/method.md#fused-ensemble).

``tools/fit_prior.py`` trains one detector up to four times at different priors and on
different labels (the provisional, two candidates, the self-training round). Their
detections differ most where the labels say least, on the unannotated cells: a cell is
found by all of them, a look-alike by few. ``FusedEnsemble`` runs every member on the
batch and fuses the detections per image (:func:`.box_fusion.fuse_detections`), so the
cells all members find rank above what one member alone takes for a cell.

A config holds the members' common model once::

    model = dict(type='FusedEnsemble', detector=<the detector's model dict>,
                 num_members=4, iou_thr=0.55, weights=[0.2, 0.1, 0.2, 0.5])

and its checkpoint the members' weights under ``members.<i>.``
(:func:`mmdet_pu.workflow.fused_ensemble.write_ensemble_checkpoint`). It predicts
(``tools/test.py``, the tiled loops, slides); it does not train. The tiled test and
validation loops run each member over the tiles of an image, merge each member's tiles
as for one detector and fuse the members' whole-image detections (:meth:`fuse`), so no
NMS runs after the fusion, which removes duplicates itself; slide inference
(:func:`mmdet_pu.apis.slide.infer_slide`) does the same on the whole slide.
"""
import copy
from typing import Optional, Sequence, Tuple

from mmdet.models.detectors.base import BaseDetector
from mmdet.registry import MODELS
from mmdet.structures import OptSampleList, SampleList
from mmdet.utils import ConfigType, OptConfigType, OptMultiConfig
from mmengine.structures import InstanceData
from torch import Tensor, nn

from .box_fusion import FUSION_IOU, fuse_instances, member_exponents, member_weights


@MODELS.register_module()
class FusedEnsemble(BaseDetector):
    """``num_members`` detectors built from one ``detector`` config, whose detections
    are fused with :func:`~.box_fusion.fuse_detections` at ``iou_thr``.

    Args:
        detector: the model config of every member (its ``data_preprocessor`` is the
            ensemble's unless ``data_preprocessor`` is given).
        num_members: how many members, at least 1.
        iou_thr: the IoU above which a detection joins a cluster, in (0, 1).
        weights: each member's share of the vote, ``num_members`` numbers >= 0
            (normalised; default: equal shares), or per member one number per class
            (each class's normalised over the members; 0: the member brings no
            detection of that class).
        score_exponents: per member one exponent > 0 per class: the member's scores
            of the class enter the fusion as ``s ** e`` (default: unchanged).
    """

    def __init__(self, detector: ConfigType, num_members: int, iou_thr: float = FUSION_IOU,
                 weights: Optional[Sequence] = None,
                 score_exponents: Optional[Sequence[Sequence[float]]] = None,
                 data_preprocessor: OptConfigType = None,
                 init_cfg: OptMultiConfig = None) -> None:
        if not isinstance(num_members, int) or num_members < 1:
            raise ValueError(f'FusedEnsemble: num_members must be an integer >= 1, got '
                             f'{num_members!r}')
        if not 0 < iou_thr < 1:
            raise ValueError(f'FusedEnsemble: iou_thr must be in (0, 1), got {iou_thr!r}')
        weights = member_weights(weights, num_members)  # checked before building
        exponents = None if score_exponents is None else member_exponents(
            score_exponents, num_members)
        if data_preprocessor is None:
            data_preprocessor = copy.deepcopy(detector.get('data_preprocessor'))
        super().__init__(data_preprocessor=data_preprocessor, init_cfg=init_cfg)
        self.members = nn.ModuleList(
            MODELS.build(copy.deepcopy(detector)) for _ in range(num_members))
        self.iou_thr, self.weights, self.score_exponents = iou_thr, weights, exponents

    def predict(self, batch_inputs: Tensor, batch_data_samples: SampleList,
                rescale: bool = True) -> SampleList:
        """Every member's detections of each image, fused."""
        per_member = []
        for member in self.members:
            samples = member.predict(batch_inputs, batch_data_samples, rescale=rescale)
            per_member.append([sample.pred_instances for sample in samples])
        results = [self.fuse(image_preds) for image_preds in zip(*per_member)]
        return self.add_pred_to_datasample(batch_data_samples, results)

    def fuse(self, member_preds: Sequence[InstanceData]) -> InstanceData:
        """One image's detections by every member (``bboxes``, ``scores``, ``labels``),
        fused; the tiled loops call it on each member's merged whole-image detections."""
        if len(member_preds) != len(self.members):
            raise ValueError(f'FusedEnsemble.fuse: expected the detections of '
                             f'{len(self.members)} members, got {len(member_preds)}')
        return fuse_instances(member_preds, self.iou_thr, self.weights,
                              self.score_exponents)

    def loss(self, batch_inputs: Tensor, batch_data_samples: SampleList):
        raise RuntimeError('FusedEnsemble does not train: train each member with its own '
                           'config (tools/fit_prior.py trains them and writes the '
                           'ensemble)')

    def _forward(self, batch_inputs: Tensor,
                 batch_data_samples: OptSampleList = None) -> Tuple:
        """Every member's raw outputs, in member order."""
        return tuple(member._forward(batch_inputs, batch_data_samples)
                     for member in self.members)

    def extract_feat(self, batch_inputs: Tensor) -> Tuple:
        """Every member's features, in member order."""
        return tuple(member.extract_feat(batch_inputs) for member in self.members)
