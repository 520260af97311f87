# Random deletion until four annotated cells per patch remain.
deletion = dict(type='KeepPerPatch', k=4, order='random', seed=0)
