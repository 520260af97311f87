# Your own data, several classes (prepare.py qupath --classes a,b / masks --type-masks
# DIR --class-names a,b): multi-class PU learning (MultiPULoss, one prior per class) in
# the RoI head and a binary PU RPN, otherwise custom_pu.py. The classes come from the
# prepared data; the classes' priors start as an even share of 0.25 and
# tools/fit_prior.py fits each class's and the RPN's.
_base_ = './custom_pu.py'
model = dict(roi_head=dict(bbox_head=dict(
    loss_cls=dict(_delete_=True, type='MultiPULoss', priors=[0.25], loss_weight=1.0))))
