"""Check that the environment can run mmdet_pu; exit non-zero with the reason if not.

The classic trap is an mmcv built without its C++ ops (pip without
``--no-build-isolation``): it imports fine and fails on the first NMS. This script runs
``mmcv.ops.nms`` and ``mmcv.ops.RoIAlign`` for real, and says whether they ran compiled
or on mmdet_pu's torch stand-ins (``mmdet_pu.ops_fallback``: an mmcv installed without
its ops, ``MMCV_OPS=torch make setup``). ``--mmcv-only`` asks for the compiled ops.
"""
import argparse
import sys


def check_mmcv_ops():
    """Run NMS and RoIAlign on the CPU, and on the GPU where torch has one."""
    import torch
    from mmcv.ops import RoIAlign, nms

    devices = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])
    for device in devices:
        boxes = torch.tensor([[0., 0., 10., 10.], [1., 1., 11., 11.], [50., 50., 60., 60.]],
                             device=device)
        scores = torch.tensor([0.9, 0.8, 0.7], device=device)
        _, keep = nms(boxes, scores, iou_threshold=0.5)
        assert keep.tolist() == [0, 2], f'mmcv.ops.nms returned {keep.tolist()} on {device}'
        feats = torch.arange(16., device=device).view(1, 1, 4, 4)
        rois = torch.tensor([[0., 0., 0., 4., 4.]], device=device)
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
        if not args.mmcv_only:
            import mmdet_pu  # noqa: F401  (puts the stand-ins in place where needed)
        check_mmcv_ops()
    except Exception as exc:  # report any failure with its reason
        sys.exit(f'mmcv ops are not usable ({type(exc).__name__}: {exc}). '
                 'Rebuild with: MMCV_WITH_OPS=1 pip install --no-build-isolation '
                 'mmcv==2.1.0, or set up with MMCV_OPS=torch make setup (no compiled '
                 'ops: mmdet_pu.ops_fallback runs them in torch)')
    if args.mmcv_only:
        return
    import torch

    from mmdet_pu.ops_fallback import in_use
    versions = check_stack()
    ops = ('torch stand-ins of mmdet_pu.ops_fallback' if in_use()
           else 'compiled ops')
    print(f'OK: torch {torch.__version__}, mmcv {mmcv.__version__} (nms, RoIAlign run: '
          f'{ops}), {versions}, torchvision not imported')


if __name__ == '__main__':
    main()
