"""Candidate priors: each stage's share of cells as an estimate report gives it
(:mod:`.estimate_file`), scaled in odds by a factor, ``pi' = f pi / (1 - pi + f pi)`` (so
it stays in (0, 1)), and the ``--cfg-options`` that train a detector at those priors.
The prior fit and the family of synthetic regimes train them (``tools/fit_prior.py``,
``tools/prior_family.py``)."""
import json
from typing import Dict, List, Optional

from .keys import ROI_PRIORS_KEY

#: The RoI head's estimator of the share of cells and its fallback.
ROI_ESTIMATOR, ROI_FALLBACK = 'bbe', 'label_frequency'
RPN_ESTIMATOR = 'label_frequency'
#: The largest sum of the class priors a candidate may have (MultiPULoss needs < 1).
MAX_TOTAL_PRIOR = 0.95


def scale_odds(prior: float, factor: float) -> float:
    """``prior`` with its odds multiplied by ``factor``."""
    odds = factor * prior / (1 - prior)
    return odds / (1 + odds)


def _class_agnostic(stage: dict) -> bool:
    """The stage is the RPN: one share, no ``per_class``."""
    return not any('per_class' in estimate for estimate in stage['estimates'].values())


def stage_estimator(report: dict, stage: dict, roi_estimator: str, rpn_estimator: str) -> str:
    """The estimator a stage's share is taken from: ``rpn_estimator`` for the RPN;
    ``roi_estimator`` for a stage that classifies, except that the stages of a dense or
    cascade report (``detector``), which have the label frequency and the oracle only,
    take :data:`ROI_FALLBACK` for Faster R-CNN's own RoI estimators."""
    if _class_agnostic(stage):
        return rpn_estimator
    if 'detector' in report and roi_estimator not in ('label_frequency', 'oracle'):
        return ROI_FALLBACK
    return roi_estimator


def estimated_shares(report: dict, roi_estimator: str = ROI_ESTIMATOR,
                     rpn_estimator: str = RPN_ESTIMATOR) -> dict:
    """``{stage: share}`` of an estimate report, in the order of its stages: per class a
    list for a stage that classifies (Faster R-CNN's ``roi``; ``head``; ``roi0``, ...), by
    default BBE (the label frequency where BBE has none, and in dense and cascade
    stages); one share for the RPN, by default its label frequency, None when it has no
    prior key (``'oracle'``: the shares with the complete labels)."""
    shares = {}
    for name, stage in report['stages'].items():
        estimator = stage_estimator(report, stage, roi_estimator, rpn_estimator)
        if _class_agnostic(stage):
            shares[name] = None if stage['key'] is None else float(
                stage['estimates'][estimator]['value'])
            continue
        values = []
        for cls in report['classes']:
            value = stage['estimates'][estimator]['per_class'][cls]['prior']
            if value is None:
                value = stage['estimates'][ROI_FALLBACK]['per_class'][cls]['prior']
            values.append(float(value))
        shares[name] = values
    return shares


def _round(name: str, value: float) -> float:
    """A candidate class prior: 4 decimals in Faster R-CNN's RoI head (``roi``), 4
    significant digits elsewhere (a dense head's priors are below 0.01)."""
    return round(value, 4) if name == 'roi' else float(f'{value:.4g}')


def candidate_keys(report: dict) -> Dict[str, Optional[str]]:
    """``{stage: key}``: where a candidate sets each stage's prior. A stage's report key,
    except in a multi-class report of a config with a ``PriorUpdateHook`` whose options
    remove the hook (``custom_hooks=[]``) and fix the class priors: its RoI stage then
    trains at the ``MultiPULoss`` priors, which the candidate scales (the hook's
    ``anchor_prior`` no longer exists)."""
    keys = {name: stage['key'] for name, stage in report['stages'].items()}
    option_keys = [option.split('=', 1)[0] for option in report['cfg_options']]
    if 'roi' in keys and 'custom_hooks=[]' in report['cfg_options'] \
            and ROI_PRIORS_KEY in option_keys:
        keys['roi'] = ROI_PRIORS_KEY
    return keys


def candidate_options(report: dict, factor: float, shares: Optional[dict] = None,
                      rpn_digits: int = 5) -> Dict[str, object]:
    """``{key: value}`` that train every stage at ``factor`` times its share (in odds;
    default :func:`estimated_shares`; the class priors rounded by :func:`_round`, the
    RPN's to ``rpn_digits`` decimals) at :func:`candidate_keys`, plus the report's
    other options (e.g. ``custom_hooks=[]``, which leaves out a multi-class update rule:
    the class priors are fixed). A multi-class update rule kept in the config gets its
    anchor class's share as ``anchor_prior``."""
    shares = shares or estimated_shares(report)
    keys = candidate_keys(report)
    anchor = report['classes'].index(report['anchor_class']) \
        if report.get('anchor_class') else 0
    options = {}
    for option in report['cfg_options']:
        key, value = option.split('=', 1)
        if key not in keys.values():
            options[key] = value
    for name, share in shares.items():
        key = keys[name]
        if key is None:
            continue
        if not isinstance(share, list):  # the RPN
            options[key] = round(scale_odds(share, factor), rpn_digits)
            continue
        values = [scale_odds(value, factor) for value in share]
        if len(values) > 1 and sum(values) > MAX_TOTAL_PRIOR:
            values = [value * MAX_TOTAL_PRIOR / sum(values) for value in values]
        values = [_round(name, value) for value in values]
        options[key] = values if key.endswith('.priors') else values[anchor]
    return options


def option_strings(options: Dict[str, object]) -> List[str]:
    """``['key=value', ...]`` as ``--cfg-options`` takes them (lists without spaces)."""
    def text(value):
        return json.dumps(value, separators=(',', ':')) if isinstance(value, list) \
            else str(value)
    return [f'{key}={text(value)}' for key, value in options.items()]
