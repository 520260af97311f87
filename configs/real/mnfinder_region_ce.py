# Real fluorescence nuclei (mnfinder), regional annotation: every nucleus inside one
# 96 x 96 px area per 256 px training tile, none outside: cross-entropy baseline.
_base_ = './mnfinder_keep1_ce.py'
deletion = dict(_delete_=True, type='KeepRegion', size=96, seed=0)
