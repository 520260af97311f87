# Real fluorescence nuclei (mnfinder), random keep-1 deletion, slim ATSS: PU with the
# box-fit negatives of the labeled cells (the anchors that fit one badly) learned as
# background (docs/method.md#box-fit-negatives).
_base_ = './mnfinder_atss_keep1_pu.py'
model = dict(bbox_head=dict(box_fit_weight=1.0))
