# CRCHistoPhenotypes nuclei in four classes, every classified nucleus annotated, slim
# model on CPU: upper bound (cross entropy; the unclassified nuclei stay ignored regions).
_base_ = './crchisto_classes_keep1_ce.py'
deletion = None
