# Random deletion until two annotated cells per patch remain (CRCHisto, ~4 % kept).
deletion = dict(type='KeepPerPatch', k=2, order='random', seed=0)
