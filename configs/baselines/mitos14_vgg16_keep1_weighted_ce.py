# MITOS-ATYPIA-14, random keep-1 deletion, VGG16: weighted cross-entropy baseline
# (Appendix A, Eq. A1, Table A1): H_wCE(c, z) = -w z log(c) - (1 - z) log(1 - c) with
# w = 1 / pi, pi = 0.04 (the MITOS prior), in both stages. RPN: sigmoid BCE whose
# class_weight is PyTorch's pos_weight; RoI head: softmax with class weights (w, 1).
_base_ = './mitos14_vgg16_keep1_ce.py'
model = dict(
    rpn_head=dict(loss_cls=dict(class_weight=[1 / 0.04])),
    roi_head=dict(bbox_head=dict(loss_cls=dict(class_weight=[1 / 0.04, 1.0]))))
