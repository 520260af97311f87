# CRCHistoPhenotypes nuclei, random keep-2 deletion, slim model on CPU: PU learning, one pi
# in both stages.
_base_ = './crchisto_keep1_pu.py'
deletion = dict(k=2)
