# CRCHistoPhenotypes nuclei in four classes, at most ten annotations of each class per 250
# px tile (the others deleted at random: the paper's NuCLS protocol, Section 3.1.4), slim
# model on CPU: multi-class PU learning with fixed priors. The class priors are shares of
# all samples, so they stay those of the keep-1 config.
_base_ = './crchisto_classes_keep1_mpu_fixed.py'
deletion = dict(k=10)
