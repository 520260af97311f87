"""Check that the environment can run mmdet_pu; exit non-zero with the reason if not.

The classic trap is an mmcv built without its C++ ops (pip without
``--no-build-isolation``): it imports fine and fails on the first NMS. This script runs
``mmcv.ops.nms`` and ``mmcv.ops.RoIAlign`` for real.
"""
import argparse
import sys


def check_mmcv_ops():
    import torch
    from mmcv.ops import RoIAlign, nms

    boxes = torch.tensor([[0., 0., 10., 10.], [1., 1., 11., 11.], [50., 50., 60., 60.]])
    scores = torch.tensor([0.9, 0.8, 0.7])
    _, keep = nms(boxes, scores, iou_threshold=0.5)
    assert keep.tolist() == [0, 2], f'mmcv.ops.nms returned {keep.tolist()}'
    feats = torch.arange(16.).view(1, 1, 4, 4)
    rois = torch.tensor([[0., 0., 0., 4., 4.]])
    out = RoIAlign(output_size=2, spatial_scale=1.0, sampling_ratio=2)(feats, rois)
    assert out.shape == (1, 1, 2, 2) and torch.isfinite(out).all()


def check_stack():
    import mmdet
    import mmengine

    import mmdet_pu  # noqa: F401
    assert 'torchvision' not in sys.modules, 'importing mmdet_pu imported torchvision'
    return f'mmdet {mmdet.__version__}, mmengine {mmengine.__version__}'


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--mmcv-only', action='store_true',
                        help='only check that mmcv has working C++ ops')
    args = parser.parse_args()
    try:
        import mmcv
        check_mmcv_ops()
    except Exception as exc:  # report any failure with its reason
        sys.exit(f'mmcv ops are not usable ({type(exc).__name__}: {exc}). '
                 'Rebuild with: MMCV_WITH_OPS=1 pip install --no-build-isolation '
                 'mmcv==2.1.0')
    if args.mmcv_only:
        return
    import torch
    versions = check_stack()
    print(f'OK: torch {torch.__version__}, mmcv {mmcv.__version__} (nms, RoIAlign run), '
          f'{versions}, torchvision not imported')


if __name__ == '__main__':
    main()
