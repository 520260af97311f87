"""mmdet_pu.launch: --cfg-options as the tools parse them."""
from mmdet_pu.launch import parse_cfg_options


def test_cfg_options_parse_as_the_tools_do():
    assert parse_cfg_options([]) == {}
    options = parse_cfg_options(['model.roi_head.bbox_head.loss_cls.priors=[0.2, 0.1]',
                                 'custom_hooks=[]', 'train_cfg.max_iters=2'])
    assert options == {'model.roi_head.bbox_head.loss_cls.priors': [0.2, 0.1],
                       'custom_hooks': [], 'train_cfg.max_iters': 2}
