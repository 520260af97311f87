# Real fluorescence nuclei (mnfinder), regional annotation (mnfinder_region_ce.py): PU
# learning at the keep-1 config's priors.
_base_ = './mnfinder_keep1_pu.py'
deletion = dict(_delete_=True, type='KeepRegion', size=96, seed=0)
