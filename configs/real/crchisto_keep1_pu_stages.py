# CRCHistoPhenotypes nuclei, random keep-1 deletion, slim model on CPU: PU learning with a
# prior per stage (docs/method.md#priors-per-stage), mnfinder's as a start: the config
# that the own-data workflow fits (tools/fit_prior.py; keep-2/5: --cfg-options
# deletion.k=2).
_base_ = './crchisto_keep1_pu.py'
model = dict(
    rpn_head=dict(loss_cls=dict(prior=0.006)),
    roi_head=dict(bbox_head=dict(loss_cls=dict(prior=0.25))))
