# CRCHistoPhenotypes nuclei in four classes, at most ten annotations of each class per 250
# px tile (the paper's NuCLS protocol), slim model on CPU: multi-class PU learning with the
# cell and its class factorized (FactorizedMultiPULoss), at the fixed priors.
_base_ = './crchisto_classes_keep1_mpu_factorized.py'
deletion = dict(k=10)
