"""Candidate priors (mmdet_pu.prior.candidates): the estimated shares of a report,
scaled in odds, as ``--cfg-options``."""
import pytest

from mmdet_pu.prior import candidates

ROI_KEY = 'model.roi_head.bbox_head.loss_cls.prior'
ROI_PRIORS_KEY = 'model.roi_head.bbox_head.loss_cls.priors'
RPN_KEY = 'model.rpn_head.loss_cls.prior'


def report(classes, bbe, label_frequency, rpn, roi_key=ROI_KEY, extra=()):
    """An estimate report with the fields the fit reads."""
    def per_class(values):
        return dict(per_class={c: dict(prior=v) for c, v in zip(classes, values)})
    return dict(
        classes=list(classes),
        stages=dict(roi=dict(key=roi_key, estimates=dict(
                        bbe=per_class(bbe), label_frequency=per_class(label_frequency))),
                    rpn=dict(key=RPN_KEY, estimates=dict(label_frequency=dict(value=rpn)))),
        cfg_options=[f'{roi_key}=0.1', f'{RPN_KEY}=0.01', *extra])


def test_scaling_in_odds_stays_in_the_unit_interval():
    assert candidates.scale_odds(0.25, 1) == pytest.approx(0.25)
    assert candidates.scale_odds(0.25, 3) == pytest.approx(0.5)  # odds 1/3 -> 1
    assert candidates.scale_odds(0.9, 100) < 1 and candidates.scale_odds(0.001, 0.01) > 0


def test_candidates_scale_every_stage_and_keep_the_other_options():
    binary = report(['cell'], [0.25], [0.4], 0.01)
    assert candidates.estimated_shares(binary) == dict(roi=[0.25], rpn=0.01)
    options = candidates.candidate_options(binary, 3)
    assert options == {ROI_KEY: 0.5, RPN_KEY: pytest.approx(0.0294, abs=1e-4)}
    # several classes: BBE per class, the label frequency where BBE has none; the
    # report's other options (a multi-class fit leaves out the update hook) are kept
    multi = report(['a', 'b', 'c'], [0.3, None, 0.2], [0.35, 0.25, 0.22], 0.05,
                   roi_key=ROI_PRIORS_KEY, extra=['custom_hooks=[]'])
    assert candidates.estimated_shares(multi)['roi'] == [0.3, 0.25, 0.2]
    options = candidates.candidate_options(multi, 2)
    assert options['custom_hooks'] == '[]'
    priors = options[ROI_PRIORS_KEY]
    assert sum(priors) == pytest.approx(candidates.MAX_TOTAL_PRIOR, abs=1e-3)  # capped below 1
    assert priors == sorted(priors, reverse=True)  # proportions kept
    strings = candidates.option_strings(options)
    assert strings[0] == 'custom_hooks=[]'
    assert strings[1] == f'{ROI_PRIORS_KEY}=[{",".join(map(str, priors))}]'  # no spaces


def hook_report(cfg_options, anchor_class='b'):
    """A multi-class report of a config with a PriorUpdateHook (its RoI key is the
    hook's ``anchor_prior``), as ``build_report`` writes it."""
    multi = report(['a', 'b', 'c'], [0.3, 0.2, 0.1], [0.3, 0.2, 0.1], 0.05,
                   roi_key='custom_hooks.0.anchor_prior')
    return dict(multi, anchor_class=anchor_class, cfg_options=cfg_options)


def test_candidates_of_a_multi_class_config_with_the_update_hook():
    from mmengine import Config

    from mmdet_pu.engine.launch import parse_cfg_options
    from tests._data import REPO
    shares = [candidates.scale_odds(v, 1.5) for v in (0.3, 0.2, 0.1)]  # sum < 0.95
    # the fit's options remove the hook and fix the class priors: those are scaled
    fixed = hook_report([f'{ROI_PRIORS_KEY}=[0.3, 0.2, 0.1]', f'{RPN_KEY}=0.05',
                         'custom_hooks=[]'])
    assert candidates.candidate_keys(fixed)['roi'] == ROI_PRIORS_KEY
    options = candidates.candidate_options(fixed, 1.5)
    assert options[ROI_PRIORS_KEY] == [round(v, 4) for v in shares]
    assert not any(key.startswith('custom_hooks.') for key in options)
    cfg = Config.fromfile(str(REPO / 'configs/pu/nucls_mpu.py'))
    cfg.merge_from_dict(parse_cfg_options(candidates.option_strings(options)))
    assert cfg.custom_hooks == [] and cfg.model.roi_head.bbox_head.loss_cls.priors == [
        round(v, 4) for v in shares]
    # the hook kept: its pi_1 is the anchor class's share
    kept = hook_report([f'{ROI_PRIORS_KEY}=[0.3, 0.2, 0.1]', f'{RPN_KEY}=0.05'])
    options = candidates.candidate_options(kept, 1.5)
    assert options['custom_hooks.0.anchor_prior'] == round(shares[1], 4)


def stage_report(classes, stages, detector='cascade'):
    """A dense or cascade estimate report: ``stages`` maps a stage name to its key and
    its label frequency (a list per class; one value for the RPN)."""
    def entry(key, shares):
        if not isinstance(shares, list):
            return dict(key=key, estimates=dict(label_frequency=dict(value=shares)))
        return dict(key=key, estimates=dict(label_frequency=dict(
            value=shares if len(shares) > 1 else shares[0],
            per_class={c: dict(prior=v) for c, v in zip(classes, shares)})))
    return dict(detector=detector, classes=list(classes),
                stages={name: entry(*stage) for name, stage in stages.items()},
                cfg_options=[f'{key}=0.1' for key, _ in stages.values() if key])


def test_candidates_of_dense_and_cascade_stages():
    stages = [f'model.roi_head.bbox_head.{i}.loss_cls.prior' for i in range(3)]
    cascade = stage_report(['cell'], dict(rpn=(RPN_KEY, 0.004), roi0=(stages[0], [0.25]),
                                          roi1=(stages[1], [0.5]), roi2=(None, [0.6])))
    # the label frequency of every stage (no BBE); a stage without a key is left out
    assert candidates.estimated_shares(cascade) == dict(rpn=0.004, roi0=[0.25],
                                                        roi1=[0.5], roi2=[0.6])
    assert candidates.candidate_options(cascade, 3) == {
        RPN_KEY: pytest.approx(0.01190, abs=1e-5), stages[0]: 0.5, stages[1]: 0.75}
    dense_key = 'model.bbox_head.loss_cls.priors'
    dense = stage_report(['a', 'b'], dict(head=(dense_key, [0.00666, 0.00123])), 'dense')
    options = candidates.candidate_options(dense, 2)
    # four significant digits: a dense head's priors are small
    assert options == {dense_key: [0.01323, 0.002457]}
    assert candidates.option_strings(options) == [f'{dense_key}=[0.01323,0.002457]']
