# CRCHistoPhenotypes nuclei in four classes, at most ten annotations of each class per 250
# px tile (the others deleted at random: the paper's NuCLS protocol, Section 3.1.4), slim
# model on CPU: the naive PU approximation at the fixed priors. The class priors are
# shares of all samples, so they stay those of the keep-1 config.
_base_ = './crchisto_classes_keep1_naive_pu.py'
deletion = dict(k=10)
