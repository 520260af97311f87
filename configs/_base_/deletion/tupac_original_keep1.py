# TUPAC16 (Section 3.1.3): start from the original, incomplete labels (annotations
# flagged `original` by data_prep/prepare.py tupac among the complete alternative
# labels), then random deletion until one annotated cell per patch remains (~63 % of the
# cells of the train and val sets kept).
deletion = dict(type='KeepPerPatch', k=1, order='random', subset='original', seed=0)
