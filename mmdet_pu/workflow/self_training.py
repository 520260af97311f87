"""The prior fit's self-training round (:mod:`.prior_fit`, docs/method.md#self-training):
whose detections it learns as pseudo-labels, the checks that a resumed fit learns the
same ones, and the training that learns them."""
import json
import os.path as osp
from typing import Callable, Dict, List, Optional, Sequence

from mmengine.config import Config

from mmdet_pu.prior.keys import type_name
from .fit_choice import criterion_shares, training_row
from .fit_options import SELF_TRAIN_MIN_SCORE
from .fused_ensemble import file_stamps, fused_run
from .own_loss import own_loss_options, write_own_loss_config
from .pseudo_labels import write_pseudo_labels
from .runs import Run

#: The folder of the first trainings' fusion when the round learns its detections.
FUSED_SOURCE = 'fused_first'
#: The file of the round's pseudo-labels from its configured source.
PSEUDO_LABELS = 'pseudo_labels.json'
#: The option that gives the training dataset its pseudo-labels (``CellCocoDataset``).
PSEUDO_LABELS_KEY = 'train_dataloader.dataset.pseudo_labels'


def check_self_training(cfg: Config, config: str) -> None:
    """ValueError unless ``cfg`` (:func:`~.fit_options.load_fit_config` of ``config``)
    trains on a ``CellCocoDataset`` (the dataset that takes pseudo-labels)."""
    dataset = cfg.train_dataloader.dataset
    if type_name(dataset) != 'CellCocoDataset':
        raise ValueError(f'{config}: self-training adds pseudo-labels through '
                         f'CellCocoDataset, but train_dataloader.dataset is a '
                         f'{type_name(dataset)}; train without it (--no-self-train)')


def check_pseudo_source(pseudo: str, checkpoint: str,
                        uncertain_thr: Optional[float] = None,
                        learner: str = 'self_trained',
                        score_thr: Optional[float] = None) -> Optional[dict]:
    """The content of the pseudo-label file ``pseudo`` (None when absent), once checked:
    ValueError if it exists and holds the detections of
    another checkpoint than ``checkpoint``, of ``checkpoint`` as it was before it changed
    (its size or modification time differ from those the file records: its source was
    trained or fused again at the same path), another lowest uncertain score than
    ``uncertain_thr`` or, when ``score_thr`` is given, another cut (a fit resumed with
    other choices, or by a version of the workflow that cut elsewhere). The message says
    to remove the file and the folder ``learner`` of the training that learned it."""
    if not osp.isfile(pseudo):
        return None
    with open(pseudo) as f:
        content = json.load(f)
    source, stamp = content.get('checkpoint'), content.get('checkpoint_stamp')
    remedy = (f'use another --work-dir, or remove that file and the {learner} folder '
              'beside it')
    if source is None or osp.abspath(source) != osp.abspath(checkpoint):
        raise ValueError(f'{pseudo} holds the pseudo-labels of {source}, but the '
                         f'{learner} detector of this fit learns those of {checkpoint}; '
                         f'{remedy}')
    if stamp is not None and stamp != file_stamps([checkpoint])[0]:
        raise ValueError(f'{pseudo} holds the pseudo-labels of {checkpoint} as it was '
                         'when they were written, and that checkpoint has changed since '
                         f'(trained or fused again); {remedy}')
    if content.get('uncertain_thr') != uncertain_thr:
        raise ValueError(f'{pseudo} was written with uncertain detections from score '
                         f'{content.get("uncertain_thr")}, this fit asks for '
                         f'{uncertain_thr}; {remedy}')
    if score_thr is not None and content.get('score_thr') != score_thr:
        raise ValueError(f'{pseudo} holds the detections scoring at least '
                         f'{content.get("score_thr")}, this fit cuts its pseudo-labels at '
                         f'{score_thr:g}; {remedy}')
    return content


def round_cut(source: dict) -> float:
    """The round's cut (docs/method.md#self-training): the threshold of the point
    estimate of Lee & Liu's criterion on ``source``'s validation, never below
    :data:`~.fit_options.SELF_TRAIN_MIN_SCORE`: the cut the round was measured with
    (the student's, :func:`~.distillation.distillation_cut`, is not floored and takes
    the lower bound's threshold instead)."""
    return max(SELF_TRAIN_MIN_SCORE, source['val_score_thr_point'] or 0.0)


def write_source_labels(config: str, pseudo: str, options: Sequence[str], source: dict,
                        uncertain_thr: Optional[float], echo: Callable[[str], None],
                        score_thr: float) -> dict:
    """The detections of ``source`` (a row of the fit) scoring at least ``score_thr`` as
    the pseudo-label file ``pseudo``, whose summary it returns
    (:func:`~.pseudo_labels.write_pseudo_labels`); a source with a ``config`` (a
    fusion's, written with its options merged) detects with that config alone, the
    others with ``config`` and ``options``."""
    own_config = source.get('config')
    found = write_pseudo_labels(own_config or config, source['checkpoint'], pseudo,
                                [] if own_config else options, score_thr=score_thr,
                                uncertain_thr=uncertain_thr)
    band = ('' if uncertain_thr is None else
            f'; {found["num_uncertain"]} uncertain detections at {uncertain_thr:g} <= '
            f'score < {score_thr:g} ignored')
    echo(f'pseudo-labels: {found["pseudo"]} cells beside the {found["labeled"]} '
         f'labeled ones on {found["num_images"]} training images (score >= '
         f'{score_thr:g}, {source["name"]}){band}')
    return found


def pseudo_label_file(work_dir: str, index: int, source: dict) -> str:
    """The absolute path of the pseudo-label file of the round's ``index``-th candidate
    source (:func:`round_pseudo_labels`): ``pseudo_labels.json`` for the first,
    ``pseudo_labels_<name>.json`` for a fallback."""
    name = PSEUDO_LABELS if index == 0 else f'pseudo_labels_{source["name"]}.json'
    return osp.abspath(osp.join(work_dir, name))


def round_pseudo_labels(config: str, work_dir: str, options: Sequence[str],
                        sources: Sequence[dict], uncertain_thr: Optional[float],
                        echo: Callable[[str], None], more: bool = False):
    """``(source, file, counts)``: the source whose pseudo-labels the round learns, the
    file holding them and the number each source asked gave (by name). ``sources`` are
    rows of the fit (the configured source, then the criterion's choice), each cut at
    its :func:`round_cut`, its file :func:`pseudo_label_file` (written when absent; a
    stale one is an error, :func:`check_pseudo_source`).

    With ``more``, every source is asked and the one giving the most pseudo-labels is
    learned (the first on a tie): a source trained at bolder priors gives more of them
    at its own cut, and the round that learns more ranks better, or as well
    (docs/method.md#self-training). Otherwise the first source giving at least one is
    learned: one that scores no unlabeled cell at its cut would have the round train
    again as the chosen training did (the same priors and seed: a duplicate with half
    the fused vote), so the next source is asked instead. When none gives one, the
    last is returned with a warning."""
    counts, files = {}, []
    for index, source in enumerate(sources):
        pseudo, cut = pseudo_label_file(work_dir, index, source), round_cut(source)
        found = (check_pseudo_source(pseudo, source['checkpoint'], uncertain_thr,
                                     score_thr=cut)
                 or write_source_labels(config, pseudo, options, source, uncertain_thr,
                                        echo, cut))
        counts[source['name']] = found['pseudo']
        files.append(pseudo)
        if found['pseudo'] and not more:
            return source, pseudo, counts
        if not found['pseudo'] and index + 1 < len(sources) and not more:
            echo(f'{source["name"]} scores no unlabeled training cell at {cut:g}: the '
                 f'round learns the detections of {sources[index + 1]["name"]} instead')
    best = max(range(len(sources)), key=lambda i: (counts[sources[i]['name']], -i))
    source = sources[best]
    if not counts[source['name']]:
        echo(f'warning: no source scores an unlabeled training cell at its cut; the '
             f'round learns no pseudo-label and trains as {sources[-1]["name"]} did')
        return sources[-1], files[-1], counts
    if len(sources) > 1:
        echo(f'the round learns the pseudo-labels of {source["name"]}, the most of '
             + ', '.join(f'{name} {n}' for name, n in counts.items()))
    return source, files[best], counts


def self_training_run(config: str, work_dir: str, options: Sequence[str], pseudo: str,
                      loss: str = 'pu', uncertain_thr: Optional[float] = None,
                      ignoring: Sequence[str] = (),
                      init_from: Optional[str] = None) -> Run:
    """The training on the labels plus the pseudo-labels in the file ``pseudo``
    (:func:`round_pseudo_labels`) with ``options`` (the options of the training whose
    priors the round takes); with ``loss='own'`` the config with the detector's own
    classification losses (:mod:`.own_loss`, written as ``self_trained_config.py``) and
    without the options inside them (the priors). With ``uncertain_thr`` (the file's
    lowest uncertain score) and ``ignoring`` (the config's
    :func:`~.pseudo_labels.ignore_options`) the file's uncertain detections are ignored
    regions of the round. ``init_from``: a checkpoint the round starts from
    (``load_from``) instead of the config's initialisation."""
    if loss == 'own':
        own_config = osp.join(work_dir, 'self_trained_config.py')
        replaced = write_own_loss_config(config, own_config)
        config, options = own_config, own_loss_options(options, replaced)
    ignored = list(ignoring) if uncertain_thr is not None else []
    start = [] if init_from is None else [f'load_from={osp.abspath(init_from)}']
    return Run(config, osp.join(work_dir, 'self_trained'),
               [*options, f'{PSEUDO_LABELS_KEY}={pseudo}', *ignored,
                *start], name='self_trained')


def check_round_source(run: Run, pseudo: str) -> None:
    """ValueError when the round's work dir holds a training on another pseudo-label file
    than ``pseudo`` (a fit made with another ``--pseudo-labels-from``, or before the
    default compared the provisional's pseudo-labels with the chosen one's): the message
    names both files and how to resume the fit as it was made (the choice its
    ``fit_prior.json`` records; ``provisional``, the former default, without one)."""
    record = run.record() or {}
    option = f'{PSEUDO_LABELS_KEY}='
    learned = [o[len(option):] for o in record.get('options', []) if o.startswith(option)]
    if learned and learned[0] != pseudo:
        summary = osp.join(osp.dirname(run.work_dir), 'fit_prior.json')
        made_with = 'provisional'
        if osp.isfile(summary):
            with open(summary) as f:
                made_with = json.load(f).get('pseudo_labels_from') or made_with
        raise ValueError(f'{run.work_dir} learned the pseudo-labels in {learned[0]}, but '
                         f'this fit gives its round those in {pseudo}; resume it with '
                         f'--pseudo-labels-from {made_with} (the fit was made with another '
                         'choice of source, or before the default compared the '
                         'provisional\'s with the chosen one\'s), or remove that folder '
                         'to train the round again')


def pseudo_label_source(rows: List[dict], chosen: dict, pseudo_labels_from: str,
                        trained: Dict[str, Run], work_dir: str,
                        echo: Callable[[str], None]) -> dict:
    """The row whose detections the round learns first (``pseudo_labels_from``, one of
    :data:`~.fit_options.PSEUDO_LABEL_SOURCES`): the provisional's (also for ``'more'``,
    which then compares them with the chosen one's, :func:`round_pseudo_labels`), the
    chosen one's, or that of the first trainings ``rows`` fused (:data:`FUSED_SOURCE`,
    their votes :func:`~.fit_choice.criterion_shares`; evaluated like a training, and
    its ``config`` given)."""
    if pseudo_labels_from in ('more', 'provisional'):
        return rows[0]
    if pseudo_labels_from == 'chosen':
        return chosen
    weights = criterion_shares(rows)
    echo(f'fusing the {len(rows)} trainings for the pseudo-labels, their votes '
         f'{[round(w, 3) for w in weights]}')
    fused = fused_run([trained[row['name']] for row in rows], work_dir,
                      name=FUSED_SOURCE, weights=weights)
    return dict(training_row(len(rows), fused, {}), config=fused.config)
