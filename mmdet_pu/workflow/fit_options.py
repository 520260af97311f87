"""The choices of the prior fit (:mod:`.prior_fit`), their checks, and the options its
trainings start from: the config's, and the box-fit negatives it adds
(docs/method.md#box-fit-negatives)."""
from typing import List, NamedTuple, Optional, Sequence

from mmengine.config import Config

from mmdet_pu.engine.launch import parse_cfg_options
from mmdet_pu.prior.keys import type_name

#: Factors (in odds) applied to the estimated shares: the candidate trainings.
DEFAULT_FACTORS = (0.7, 2.0)
#: The self-training round's classification loss: the PU losses, or the detector's own.
SELF_TRAIN_LOSSES = ('pu', 'own')
#: The lowest score a pseudo-label may have, whatever its source's validation selected.
SELF_TRAIN_MIN_SCORE = 0.5
#: The lowest score of an uncertain detection (below the pseudo-labels' threshold) that
#: ``--uncertain-score`` suggests: the round learns it neither as a cell nor as background.
SELF_TRAIN_UNCERTAIN_SCORE = 0.1
#: Where the self-training round starts: the config's initialisation, or the weights of
#: the criterion's choice, whose priors it trains at (fine-tuning it).
SELF_TRAIN_INITS = ('scratch', 'chosen')
#: Whose detections become the self-training round's pseudo-labels: those of whichever
#: of the provisional detector (the config's priors) and the criterion's choice gives
#: more pseudo-labels at its cut (``'more'``), the provisional's, those of the
#: criterion's choice, or those of the first trainings fused (``fused_first/``). The
#: round trains at the chosen priors either way.
PSEUDO_LABEL_SOURCES = ('more', 'provisional', 'chosen', 'fused')
#: What a fit that self-trains returns: the self-trained detector, the training with the
#: best criterion among all of them, all of them as one detector whose detections are
#: fused (:mod:`.fused_ensemble`), or one detector distilled from that fused one
#: (:mod:`.distillation`).
FINAL_CHOICES = ('self_trained', 'criterion', 'fused', 'distilled')
#: The options that give one RoI box head and its sampler box-fit negatives (the head
#: learns the badly fitting boxes of the labeled cells as background), formatted with the
#: head's and the sampler's keys.
BOX_FIT_OPTIONS = ('{head}.type=BoxFitShared2FCBBoxHead',
                   '{sampler}.type=OverlapRandomSampler')


class SelfTraining(NamedTuple):
    """How the fit's self-training round trains and what the fit returns after it
    (the arguments of :func:`~.prior_fit.fit_prior` of the same names)."""
    loss: str = 'pu'
    final: str = 'distilled'
    uncertain_score: Optional[float] = None
    init: str = 'scratch'
    pseudo_labels_from: str = 'more'


def _check_choice(name: str, value, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ValueError(f'{name}: expected one of {tuple(choices)}, got {value!r}')


def check_fit_arguments(factors: Sequence[float], round_: SelfTraining) -> None:
    """ValueError unless the factors are distinct and > 0, every choice of ``round_`` is
    one of its kind and its ``uncertain_score`` is None or in
    [0, :data:`SELF_TRAIN_MIN_SCORE`)."""
    if not factors or any(not f > 0 for f in factors) or len(set(factors)) != len(factors):
        raise ValueError(f'factors must be distinct and > 0, got {list(factors)}')
    _check_choice('self_train_loss', round_.loss, SELF_TRAIN_LOSSES)
    _check_choice('final', round_.final, FINAL_CHOICES)
    _check_choice('self_train_init', round_.init, SELF_TRAIN_INITS)
    _check_choice('pseudo_labels_from', round_.pseudo_labels_from, PSEUDO_LABEL_SOURCES)
    score = round_.uncertain_score
    if score is not None and not 0 <= score < SELF_TRAIN_MIN_SCORE:
        raise ValueError(f'uncertain_score: expected 0 <= uncertain_score < '
                         f'{SELF_TRAIN_MIN_SCORE:g} or None, got {score!r}')


def load_fit_config(config: str, cfg_options: Sequence[str] = ()) -> Config:
    """``config`` with ``cfg_options`` merged: what the fit's trainings start from."""
    cfg = Config.fromfile(config)
    cfg.merge_from_dict(parse_cfg_options(cfg_options))
    return cfg


def box_fit_options(cfg: Config) -> List[str]:
    """The options that give every RoI box head of ``cfg`` (:func:`load_fit_config`)
    box-fit negatives: Faster R-CNN's head, or each stage of Cascade R-CNN, that is a
    softmax ``Shared2FCBBoxHead`` sampling with a ``RandomSampler``
    (:data:`BOX_FIT_OPTIONS` per head). ``[]`` when not every head is one: a config
    that learns box-fit negatives already, and the others (dense detectors, a sigmoid
    RoI classifier), which have no box-fit head."""
    model = cfg.get('model', {})
    heads = model.get('roi_head', {}).get('bbox_head')
    rcnn = (model.get('train_cfg') or {}).get('rcnn')
    head_key, rcnn_key = 'model.roi_head.bbox_head', 'model.train_cfg.rcnn'
    if isinstance(heads, dict) and isinstance(rcnn, dict):
        stages = [(head_key, heads, rcnn_key, rcnn)]
    elif isinstance(heads, (list, tuple)) and isinstance(rcnn, (list, tuple)) \
            and len(heads) == len(rcnn):
        stages = [(f'{head_key}.{i}', head, f'{rcnn_key}.{i}', stage)
                  for i, (head, stage) in enumerate(zip(heads, rcnn))]
    else:
        return []
    options = []
    for head_path, head, rcnn_path, stage in stages:
        softmax = isinstance(head, dict) and not head.get('loss_cls', {}).get('use_sigmoid')
        if not (type_name(head) == 'Shared2FCBBoxHead' and softmax
                and type_name(stage.get('sampler')) == 'RandomSampler'):
            return []
        options += [option.format(head=head_path, sampler=f'{rcnn_path}.sampler')
                    for option in BOX_FIT_OPTIONS]
    return options


def factor_dir(factor: float) -> str:
    """The folder of the candidate training at ``factor``: ``x<factor>``."""
    return f'x{factor:g}'
