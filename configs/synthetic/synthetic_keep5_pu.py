# Synthetic binary cells, random keep-5 deletion (five annotated cells per 256 px patch),
# slim model on CPU: PU learning at the keep-1 config's priors.
_base_ = './synthetic_keep1_pu.py'
deletion = dict(k=5)
