# Random deletion until five annotated cells per patch remain (CRCHisto, ~9 % kept).
deletion = dict(type='KeepPerPatch', k=5, order='random', seed=0)
