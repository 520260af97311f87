# CRCHistoPhenotypes nuclei, random keep-5 deletion, slim model on CPU: cross-entropy baseline.
_base_ = './crchisto_keep1_ce.py'
deletion = dict(k=5)
