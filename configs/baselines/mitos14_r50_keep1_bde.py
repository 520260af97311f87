# MITOS-ATYPIA-14, random keep-1 deletion, ResNet-50 FPN: BDE baseline, a documented
# reconstruction (docs/method.md#bde-reconstruction) (Section 3.2.3, Table 5).
_base_ = './mitos14_r50_keep1_ce.py'
model = dict(
    rpn_head=dict(type='BDERPNHead'),
    roi_head=dict(bbox_head=dict(type='BDEShared2FCBBoxHead')))
