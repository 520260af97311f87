# CRCHistoPhenotypes nuclei in four classes, keep-1 per class and tile, slim model on CPU:
# multi-class PU learning with fixed priors, one per class (the classes' shares of the
# classified nuclei times the binary RoI prior 0.25) and the RPN's own
# (docs/method.md#departures); tools/fit_prior.py fits them to the data.
_base_ = './crchisto_classes_keep1_mpu.py'
custom_hooks = []
