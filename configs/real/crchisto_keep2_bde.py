# CRCHistoPhenotypes nuclei, random keep-2 deletion, slim model on CPU: BDE baseline.
_base_ = './crchisto_keep1_bde.py'
deletion = dict(k=2)
