# MITOS-ATYPIA-14, random keep-1 deletion, VGG16: BDE baseline, a documented
# reconstruction (docs/method.md#bde-reconstruction) (Section 3.2.1, Tables 1-3; Appendix B (pi)
# and C (repeated runs)).
_base_ = './mitos14_vgg16_keep1_ce.py'
model = dict(
    rpn_head=dict(type='BDERPNHead'),
    roi_head=dict(bbox_head=dict(type='BDEShared2FCBBoxHead')))
