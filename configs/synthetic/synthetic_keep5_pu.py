# Synthetic binary cells, random keep-5 deletion (five annotated cells per 256 px patch,
# ~38 % of the cells; configs/_base_/deletion/keep5_random.py), slim model on CPU: PU
# learning. The second deletion level of the prior-estimation comparison
# (docs/experiments.md, "Training with the estimate").
_base_ = ['./synthetic_keep1_pu.py']
deletion = dict(_base_.deletion, k=5)
train_dataloader = dict(dataset=dict(deletion=deletion))
val_dataloader = dict(dataset=dict(deletion=deletion))
# The keep-1 config's priors: RoI 0.25, RPN 0.006 (see the comparison for other values).
