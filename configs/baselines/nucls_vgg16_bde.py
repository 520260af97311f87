# NuCLS, at most ten annotations per class and image, VGG16: BDE baseline, a documented
# reconstruction (docs/method.md#bde-reconstruction) (Section 3.5, Table 11).
_base_ = './nucls_vgg16_ce.py'
model = dict(
    rpn_head=dict(type='BDERPNHead'),
    roi_head=dict(bbox_head=dict(type='BDEShared2FCBBoxHead')))
