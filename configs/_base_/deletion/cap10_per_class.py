# At most ten annotations of each cell type per image, deleted at random (NuCLS,
# Section 3.1.4: ~50 / 60 / 71 % of tumor / lymphocyte / stromal cells kept).
deletion = dict(type='CapPerClass', k=10, seed=0)
