"""The training pipeline's packing of the cells' weights (docs/method.md#distilled-detector)."""
import numpy as np

from mmdet.datasets.transforms import PackDetInputs
from mmdet.registry import TRANSFORMS


@TRANSFORMS.register_module()
class PackCellInputs(PackDetInputs):
    """mmdet's ``PackDetInputs``, and the cells' weights as ``gt_instances.weights``.

    A cell's weight is its instance's ``weight`` (``CellCocoDataset`` gives one to each
    pseudo-labeled cell with ``pseudo_label_weights=True``: the teacher's score), 1 for
    an instance without one; ``OverlapRandomSampler`` hands them to the RoI head's soft
    targets (:class:`~mmdet_pu.models.roi_heads.SoftTargetMixin`). Where no instance
    has a weight nothing is added, and the result is ``PackDetInputs``'.
    """

    mapping_table = {**PackDetInputs.mapping_table, 'gt_weights': 'weights'}

    def transform(self, results: dict) -> dict:
        instances = results.get('instances') or ()
        if 'gt_weights' not in results and any('weight' in i for i in instances):
            if 'gt_bboxes' in results and len(results['gt_bboxes']) != len(instances):
                raise ValueError(
                    f'PackCellInputs: {len(instances)} instances but '
                    f'{len(results["gt_bboxes"])} boxes in {results.get("img_path")}: a '
                    'transform before it dropped boxes, and their weights no longer '
                    'match; put PackCellInputs in a pipeline that keeps every box')
            results['gt_weights'] = np.array([i.get('weight', 1.0) for i in instances],
                                             dtype=np.float32)
        return super().transform(results)
