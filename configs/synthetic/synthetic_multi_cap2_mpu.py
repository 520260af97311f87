# Synthetic multi-class cells, at most two annotations per class and tile: multi-class PU
# learning with fixed priors, estimated from a provisional training instead of the
# paper's per-batch update rule (docs/experiments.md, "Fixed estimated priors").
#
# The priors are the estimates of tools/estimate_prior.py --split val (BBE for the
# classes tumor / lymphocyte / stromal, rounded to three decimals; the label frequency
# for the RPN; the tool's recommendation when this config was made), from the
# provisional detector synthetic_multi_cap2_mpu_prior_update.py trained with seed 0:
# the share of cells among the samples of each stage, so that each stage trains at its
# own prior, as in the binary configs. (The tool now recommends the risk-matched prior
# of the training split, 0.174 / 0.086 / 0.082 from this detector: test F1 0.992 against
# 0.993 for these, both with PURPNHead, and 0.995 with each seed's own estimate;
# docs/experiments.md, "With the risk-matched prior".)
# The update rule sets pi_m = pi_1 N_m / N_1 from detection counts, but a large tumor
# nucleus is covered by more RoIs than a lymphocyte, so no pi_1 gives every class its
# share: at pi_1 = 0.1 the tumor prior sat at half of its share and tumor recall
# suffered; at 0.15 the stromal prior ran away to 0.79.
#
# The RPN's PU risk is evaluated per FPN level (mmdet's RPNHead calls PULoss once per
# level and sums), not once over the batch as docs/method.md#binary-pu-risk and the binary configs do
# (PURPNHead): on this task, over seeds 0-2, it took test F1 from 0.993 to 0.994 and
# reached issue 14's 80 % of the CE -> upper bound gap, while on the binary task it did
# not help (docs/experiments.md, "Multi-class: the RPN risk per FPN level"). A level
# without labeled cells then trains as plain negatives instead of sharing the batch's
# discounted negative risk.
_base_ = ['./synthetic_multi_cap2_mpu_prior_update.py']
custom_hooks = []
model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=dict(priors=[0.206, 0.084, 0.089]))),
    rpn_head=dict(type='RPNHead', loss_cls=dict(prior=0.0467)))
