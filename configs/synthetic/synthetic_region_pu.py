# Synthetic binary cells, regional annotation (every cell inside one 96 x 96 px area per
# 256 px patch, none outside; the deletion is set below), slim model on CPU: PU
# learning at the keep-1 config's priors.
_base_ = './synthetic_keep1_pu.py'
deletion = dict(_delete_=True, type='KeepRegion', size=96, seed=0)
