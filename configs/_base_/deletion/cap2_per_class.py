# At most two annotations of each cell type per image, deleted at random: the synthetic
# multi-class tiles hold 5-10 tumor, 4-10 lymphocyte and 3-7 stromal nuclei, where a cap
# of ten (NuCLS's) would delete almost nothing; two leaves a sparse annotation like NuCLS's.
deletion = dict(type='CapPerClass', k=2, seed=0)
