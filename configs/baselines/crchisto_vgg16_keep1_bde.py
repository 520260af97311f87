# CRCHistoPhenotypes, random keep-1 deletion, VGG16: BDE baseline, a documented
# reconstruction (docs/method.md#bde-reconstruction) (Section 3.3, Tables 7-9).
_base_ = './crchisto_vgg16_keep1_ce.py'
model = dict(
    rpn_head=dict(type='BDERPNHead'),
    roi_head=dict(bbox_head=dict(type='BDEShared2FCBBoxHead')))
