# Synthetic binary cells (mitosis-like cells among unannotated look-alikes), random
# keep-1 deletion, RTMDet-tiny on CPU: PU learning. PURTMDetSepBNHead makes one
# QualityFocalPULoss call on all levels and images (docs/method.md#dense-detectors). pi
# (one per class): the share of points, over all levels, that the head's assigner makes
# positive for a cell among those it does not ignore, counted with the complete training
# labels (three significant digits) by
#   python tools/positive_share.py configs/dense/synthetic_rtmdet_keep1_ce.py \
#         --checkpoint <work dir of synthetic_rtmdet_keep1_pu.py>/iter_300.pth
# The assignment depends on the predictions, so the shares are this detector's:
# synthetic_rtmdet_keep1_pu.py trained for the 300 iterations of cpu_short with the
# values of the previous measurement (the first time with the shares of
# synthetic_rtmdet_upper_bound.py trained likewise), the step repeated until no share
# moved by more than a tenth.
_base_ = './synthetic_rtmdet_keep1_ce.py'
model = dict(bbox_head=dict(
    type='PURTMDetSepBNHead',
    # nnPU (Kiryo et al.): where a batch's bracket r < 0, ascend on it instead of
    # dropping its negative risk (the clamp of Eq. 7), which left RTMDet's negatives
    # untrained in about half the batches on real nuclei
    # (docs/research_log.md#rtmdet-nnpu-through-the-own-data-workflow-fold-0-cpu).
    loss_cls=dict(type='QualityFocalPULoss', prior=0.0416, nonnegative='nnpu')))
