# CRCHistoPhenotypes nuclei, random keep-1 deletion, slim model on CPU: BDE baseline, a
# documented reconstruction (docs/method.md#bde-reconstruction).
_base_ = './crchisto_keep1_ce.py'
model = dict(
    rpn_head=dict(type='BDERPNHead'),
    roi_head=dict(bbox_head=dict(type='BDEShared2FCBBoxHead')))
