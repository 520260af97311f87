# CRCHistoPhenotypes nuclei, complete annotations, slim model on CPU: upper bound (cross
# entropy).
_base_ = './crchisto_keep1_ce.py'
deletion = None
