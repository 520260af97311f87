# Synthetic multi-class cells (tumor / lymphocyte / stromal), at most two annotations
# per class and 256 px tile, RTMDet-tiny on CPU: PU learning. PURTMDetSepBNHead makes
# one QualityFocalPULoss call on all levels and images (docs/method.md#dense-detectors).
# pi (one per class): the share of points, over all levels, that the head's assigner
# makes positive for a cell among those it does not ignore, counted with the complete
# training labels (three significant digits) by
#   python tools/positive_share.py configs/dense/synthetic_multi_rtmdet_cap2_ce.py \
#         --checkpoint <work dir of synthetic_multi_rtmdet_cap2_pu.py>/iter_300.pth
# The assignment depends on the predictions, so the shares are this detector's:
# synthetic_multi_rtmdet_cap2_pu.py trained for the 300 iterations of cpu_short with the
# values of the previous measurement (the first time with the shares of
# synthetic_multi_rtmdet_upper_bound.py trained likewise), the step repeated until no
# share moved by more than a tenth.
_base_ = './synthetic_multi_rtmdet_cap2_ce.py'
model = dict(bbox_head=dict(
    type='PURTMDetSepBNHead',
    loss_cls=dict(type='QualityFocalPULoss', priors=[0.0258, 0.00714, 0.00924])))
