# Keep the annotated cell with the highest pathologist agreement (annotation 'score')
# on each patch (MITOS-ATYPIA-14, Section 3.1.1).
deletion = dict(type='KeepPerPatch', k=1, order='score', seed=0)
