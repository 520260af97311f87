# TUPAC16 (cases 01-23), one original label kept per patch, VGG16: BDE baseline, a
# documented reconstruction (docs/method.md#bde-reconstruction) (Section 3.4, Table 10).
_base_ = './tupac_vgg16_keep1_ce.py'
model = dict(
    rpn_head=dict(type='BDERPNHead'),
    roi_head=dict(bbox_head=dict(type='BDEShared2FCBBoxHead')))
