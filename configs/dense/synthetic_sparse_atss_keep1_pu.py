# Synthetic regime "sparse", random keep-1 deletion, slim ATSS on CPU: PU learning at the
# binary synthetic ATSS prior (synthetic_atss_keep1_pu.py), the provisional training of
# the prior workflow, which fits it to the regime (tools/fit_prior.py).
_base_ = './synthetic_sparse_atss_keep1_ce.py'
model = dict(bbox_head=dict(
    type='PUATSSHead',
    loss_cls=dict(type='FocalPULoss', prior=0.0238)))
