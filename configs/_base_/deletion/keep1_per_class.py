# One annotation of each class per patch, the others deleted at random: the multi-class
# counterpart of keep1_random.py (CRCHistoPhenotypes' four classes).
deletion = dict(type='CapPerClass', k=1, seed=0)
