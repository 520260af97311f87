# CRCHistoPhenotypes nuclei, random keep-2 deletion, slim model on CPU: cross-entropy baseline.
_base_ = './crchisto_keep1_ce.py'
deletion = dict(k=2)
