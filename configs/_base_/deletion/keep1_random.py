# Random deletion until one annotated cell per patch remains (Section 3.1.1/3.1.2;
# MITOS-ATYPIA-14 keeps ~73 %, CRCHisto ~2 % of the cells). TUPAC16 starts from its
# original labels instead: tupac_original_keep1.py.
deletion = dict(type='KeepPerPatch', k=1, order='random', seed=0)
