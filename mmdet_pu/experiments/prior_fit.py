"""Fit the class prior of a config to its own data in at most four trainings
(``tools/fit_prior.py``; the rule and its evidence: docs/experiments.md, "A family of
synthetic regimes").

Every training of a Faster R-CNN or Cascade R-CNN config (softmax ``Shared2FCBBoxHead``
RoI heads, ``RandomSampler``) learns the box-fit negatives of its labeled cells
(:func:`box_fit_options`, docs/method.md#box-fit-negatives) unless ``box_fit=False``;
dense detectors train as configured. In ``<work dir>``:

1. ``provisional/``: the config trained and tested as it is (its priors are a start);
2. ``estimate.json``: each stage's share of cells among the samples it draws, estimated
   from that detector on the incompletely annotated training split
   (``tools/estimate_prior.py``; the RoI head's by best-bin estimation, BBE, the RPN's by
   the label frequency; docs/method.md#priors-per-stage); a dense head's and every
   stage's of Cascade R-CNN by the label frequency (:mod:`mmdet_pu.prior.label_frequency`);
3. ``x<factor>/``: one training per factor, every stage's estimate scaled by the factor
   in odds, ``pi' = f pi / (1 - pi + f pi)`` (so it stays in (0, 1)); with several
   classes each class prior is scaled and a stage's priors together kept below 1
   (:mod:`mmdet_pu.prior.candidates`);
4. the choice among the provisional and the candidate trainings by Lee & Liu's criterion
   on the validation split, r^2 / detections per image at the test score threshold
   (:func:`mmdet_pu.prior.selection.choose_by_pu_criterion`), which needs only the
   labeled cells and sees the false positives of a bold prior as well as the misses of a
   timid one;
5. ``self_trained/`` (unless ``self_train=False``): the provisional detector's confident
   detections on the training split (score at least the threshold Lee & Liu's point
   estimate selected on its validation, never below 0.5,
   :mod:`mmdet_pu.experiments.pseudo_labels`; ``pseudo_labels_from='chosen'``:
   the chosen detector's; ``'fused'``: those of the first trainings fused into one
   detector, ``fused_first/``, their votes in proportion to their criterion) are added
   to the training labels as pseudo-labels
   (``pseudo_labels.json``), and the config is trained once more at the
   chosen priors (``self_train_loss='own'``: with the detector's own classification
   losses instead, :mod:`.own_loss`; ``uncertain_score``: the detections from that score
   up to the threshold are ignored regions of the round; ``self_train_init='chosen'``:
   the round fine-tunes the chosen detector; docs/method.md#self-training);
6. the fit returns all the trainings as one ``FusedEnsemble`` (``fused/``, written by
   :mod:`.fused_ensemble`; the round has half the vote, the first trainings share the
   other half by their criterion, :func:`fusion_weights`,
   docs/method.md#fused-ensemble); ``final='self_trained'``: the self-trained detector
   alone, ``final='criterion'``: the training with the best criterion.

It leaves ``fit_prior.pth`` (a hard link to the chosen run's last checkpoint, a copy on
another file system), ``fit_prior.json`` (the estimates, every training's priors,
validation recall, criterion and test metrics, those of ``fused_first/`` under
``fused_source`` when the round learned it, the choice and why) and
``fit_prior.png`` (the criterion and the validation recall against the prior of the
main stage, :func:`mmdet_pu.prior.estimate_file.main_stage`).
Runs are resumable (:class:`~.runs.Run`): the same command continues an interrupted fit.
"""
import json
import os
import os.path as osp
import shutil
from typing import Callable, Dict, List, Optional, Sequence

from mmengine.config import Config

from mmdet_pu.evaluation.comparison import load_report
from mmdet_pu.launch import parse_cfg_options
from mmdet_pu.prior.candidates import (ROI_ESTIMATOR, RPN_ESTIMATOR, candidate_keys,
                                       candidate_options, estimated_shares, option_strings,
                                       stage_estimator)
from mmdet_pu.prior.estimate_file import main_stage
from mmdet_pu.prior.keys import type_name
from mmdet_pu.prior.selection import choose_by_pu_criterion, read_val_metrics
from .fused_ensemble import fused_run
from .own_loss import own_loss_options, write_own_loss_config
from .prior_versus import estimate_run
from .pseudo_labels import ignore_options, write_pseudo_labels
from .reports import pyplot, save_figure, write_json
from .runs import Run, run_all

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
#: Whose detections become the self-training round's pseudo-labels: the provisional
#: detector's (the config's priors), those of the criterion's choice, or those of the
#: first trainings fused (``fused_first/``). The round trains at the chosen priors
#: either way.
PSEUDO_LABEL_SOURCES = ('provisional', 'chosen', 'fused')
#: The folder of the first trainings' fusion when the round learns its detections.
FUSED_SOURCE = 'fused_first'
#: What a fit that self-trains returns: the self-trained detector, the training with the
#: best criterion among all of them, or all of them as one detector whose detections are
#: fused (:mod:`.fused_ensemble`).
FINAL_CHOICES = ('self_trained', 'criterion', 'fused')
#: The self-trained round's share of the fused detector's vote; the first trainings share
#: the rest in proportion to their criterion (:func:`fusion_weights`).
ROUND_SHARE = 0.5
TEST_METRICS = ('avg_f1', 'avg_recall', 'avg_precision', 'ap')
#: The options that give one RoI box head and its sampler box-fit negatives (the head
#: learns the badly fitting boxes of the labeled cells as background), formatted with the
#: head's and the sampler's keys.
BOX_FIT_OPTIONS = ('{head}.type=BoxFitShared2FCBBoxHead',
                   '{sampler}.type=OverlapRandomSampler')


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
    return f'x{factor:g}'


def _row(index: int, run: Run, priors: Dict[str, object]) -> dict:
    """What the fit reports of one training: priors, validation and test metrics
    (``prior`` is its index: the order :func:`choose_by_pu_criterion` keeps)."""
    val = read_val_metrics(run.work_dir)
    if val is None:
        raise RuntimeError(f'{run.work_dir}: no cell_metrics/val_per_image.json; the '
                           'config must validate at the end of training')
    report = load_report(run.report)
    head = f'{report["prefix"]}/' if report.get('prefix') else ''
    test = {name: report['metrics'].get(head + name) for name in TEST_METRICS}
    return dict(name=run.name, prior=index, run_dir=run.work_dir, priors=priors,
                val_recall=val['avg_recall'], val_score_thr=val['pu_score_thr'],
                val_score_thr_point=val['pu_score_thr_point'],
                counts=val['counts'], test=test, checkpoint=run.last_checkpoint())


def check_self_training(cfg: Config, config: str) -> None:
    """ValueError unless ``cfg`` (:func:`load_fit_config` of ``config``) trains on a
    ``CellCocoDataset`` (the dataset that takes pseudo-labels)."""
    dataset = cfg.train_dataloader.dataset
    if type_name(dataset) != 'CellCocoDataset':
        raise ValueError(f'{config}: self-training adds pseudo-labels through '
                         f'CellCocoDataset, but train_dataloader.dataset is a '
                         f'{type_name(dataset)}; train without it (--no-self-train)')


def check_pseudo_source(pseudo: str, checkpoint: str,
                        uncertain_thr: Optional[float] = None) -> None:
    """ValueError if the pseudo-label file ``pseudo`` exists and holds the detections of
    another checkpoint than ``checkpoint``, or another lowest uncertain score than
    ``uncertain_thr`` (a fit resumed with other choices)."""
    if not osp.isfile(pseudo):
        return
    with open(pseudo) as f:
        content = json.load(f)
    source = content.get('checkpoint')
    if source is None or osp.abspath(source) != osp.abspath(checkpoint):
        raise ValueError(f'{pseudo} holds the pseudo-labels of {source}, but this fit '
                         f'self-trains from {checkpoint}; use another --work-dir, or '
                         'remove that file and the self_trained folder beside it')
    if content.get('uncertain_thr') != uncertain_thr:
        raise ValueError(f'{pseudo} was written with uncertain detections from score '
                         f'{content.get("uncertain_thr")}, this fit asks for '
                         f'{uncertain_thr}; use another --work-dir, or remove that file '
                         'and the self_trained folder beside it')


def self_training_run(config: str, work_dir: str, options: Sequence[str], source: dict,
                      echo: Callable[[str], None], loss: str = 'pu',
                      uncertain_score: Optional[float] = None,
                      ignoring: Sequence[str] = (),
                      init_from: Optional[str] = None) -> Run:
    """The training on the labels plus the pseudo-labels of the training ``source`` (a
    row of the fit; one with a ``config``, the fusion of the first trainings, detects
    with that config alone), the file written first if absent, with ``options`` (the
    options of the training whose priors the round takes); with ``loss='own'`` the
    config with the detector's own classification losses
    (:mod:`.own_loss`, written as ``self_trained_config.py``) and without the options
    inside them (the priors). With ``uncertain_score`` and ``ignoring`` (the config's
    :func:`~.pseudo_labels.ignore_options`) the detections from ``uncertain_score`` up to
    the pseudo-labels' threshold are ignored regions of the round. ``init_from``: a
    checkpoint the round starts from (``load_from``) instead of the config's
    initialisation."""
    pseudo = osp.abspath(osp.join(work_dir, 'pseudo_labels.json'))
    uncertain_thr = uncertain_score if ignoring else None
    check_pseudo_source(pseudo, source['checkpoint'], uncertain_thr)
    if not osp.isfile(pseudo):
        score_thr = max(SELF_TRAIN_MIN_SCORE, source['val_score_thr_point'] or 0.0)
        own_config = source.get('config')  # a fusion's, written with its options merged
        found = write_pseudo_labels(own_config or config, source['checkpoint'], pseudo,
                                    [] if own_config else options, score_thr=score_thr,
                                    uncertain_thr=uncertain_thr)
        band = ('' if uncertain_thr is None else
                f'; {found["num_uncertain"]} uncertain detections at {uncertain_thr:g} <= '
                f'score < {score_thr:g} ignored')
        echo(f'pseudo-labels: {found["pseudo"]} cells beside the {found["labeled"]} '
             f'labeled ones on {found["num_images"]} training images (score >= '
             f'{score_thr:g}, {source["name"]}){band}')
    if loss == 'own':
        own_config = osp.join(work_dir, 'self_trained_config.py')
        replaced = write_own_loss_config(config, own_config)
        config, options = own_config, own_loss_options(options, replaced)
    ignored = list(ignoring) if uncertain_thr is not None else []
    start = [] if init_from is None else [f'load_from={osp.abspath(init_from)}']
    return Run(config, osp.join(work_dir, 'self_trained'),
               [*options, f'train_dataloader.dataset.pseudo_labels={pseudo}', *ignored,
                *start], name='self_trained')


def link_checkpoint(source: str, target: str) -> None:
    """``target`` becomes a hard link to ``source`` (a copy across file systems); one
    already (a resumed fit with the same choice) is left as it is."""
    if osp.exists(target) and osp.samefile(source, target):
        return  # renaming a link onto its own file would leave the temporary name
    tmp = f'{target}.tmp{os.getpid()}'
    try:
        os.link(source, tmp)
    except OSError:
        shutil.copyfile(source, tmp)
    os.replace(tmp, target)


def draw_fit(rows: List[dict], chosen: dict, stage: str, key: str, shares: dict):
    """The criterion and the validation recall of every training against the prior of
    ``stage`` (at ``key``; the first class's with several classes), the estimated share
    and the ``chosen`` row (None: none of them) marked."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))

    def stage_prior(row):
        value = row['priors'][stage]
        return value[0] if isinstance(value, list) else value

    rows = sorted(rows, key=stage_prior)
    x = [stage_prior(row) for row in rows]
    ax.plot(x, [row['pu_criterion'] for row in rows], 'o-', label="Lee & Liu's criterion")
    ax.plot(x, [row['val_recall'] for row in rows], 's--', label='validation recall')
    share = shares[stage]
    ax.axvline(share[0] if isinstance(share, list) else share, color='grey', lw=1,
               label='estimated share')
    if chosen is not None:
        ax.plot([stage_prior(chosen)], [chosen['pu_criterion']], '*', ms=16,
                color='crimson', label=f'chosen: {chosen["name"]}')
    for xi, row in zip(x, rows):
        ax.annotate(row['name'], (xi, row['pu_criterion']), textcoords='offset points',
                    xytext=(4, 6), fontsize=8)
    ax.set_xscale('log')
    ax.set_xlabel(f'{key} (log scale)')
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8, loc='lower left')
    ax.set_title('fit_prior: the trainings on the validation split')
    fig.tight_layout()
    return fig


def fit_prior(config: str, work_dir: str, cfg_options: Sequence[str] = (), seed: int = 0,
              factors: Sequence[float] = DEFAULT_FACTORS, jobs: int = 1,
              self_train: bool = True, echo: Callable[[str], None] = print,
              self_train_loss: str = 'pu', final: str = 'fused',
              box_fit: bool = True,
              uncertain_score: Optional[float] = None,
              self_train_init: str = 'scratch',
              pseudo_labels_from: str = 'provisional') -> dict:
    """Run the fit (module docstring) and write its outputs; returns the summary.

    ``box_fit``: every training of a Faster R-CNN or Cascade R-CNN config learns
    box-fit negatives (:func:`box_fit_options`, put before ``cfg_options``).

    ``self_train_loss``: the self-training round's classification loss, one of
    :data:`SELF_TRAIN_LOSSES`: the config's PU losses at the chosen priors (``'pu'``) or
    the detector's own (``'own'``, :mod:`.own_loss`). ``final``: what the fit returns
    when it self-trains, one of :data:`FINAL_CHOICES`. ``uncertain_score``: the lowest
    score of the detections the round ignores (e.g. :data:`SELF_TRAIN_UNCERTAIN_SCORE`;
    None: none; a config without an assigner that can ignore,
    :func:`~.pseudo_labels.ignore_options`, ignores none).
    ``self_train_init``: where the round starts, one of :data:`SELF_TRAIN_INITS`.
    ``pseudo_labels_from``: whose detections the round learns, one of
    :data:`PSEUDO_LABEL_SOURCES`.

    Raises:
        ValueError: a factor <= 0, an unknown ``self_train_loss``, ``final``,
            ``self_train_init`` or ``pseudo_labels_from``, an ``uncertain_score``
            outside [0, :data:`SELF_TRAIN_MIN_SCORE`), or a work dir holding runs or
            pseudo-labels of other options.
        RuntimeError: a training or the estimate failed, or no training detects a
            labeled validation cell (the criterion cannot choose).
    """
    if not factors or any(not f > 0 for f in factors) or len(set(factors)) != len(factors):
        raise ValueError(f'factors must be distinct and > 0, got {list(factors)}')
    if self_train_loss not in SELF_TRAIN_LOSSES:
        raise ValueError(f'self_train_loss: expected one of {SELF_TRAIN_LOSSES}, got '
                         f'{self_train_loss!r}')
    if final not in FINAL_CHOICES:
        raise ValueError(f'final: expected one of {FINAL_CHOICES}, got {final!r}')
    if self_train_init not in SELF_TRAIN_INITS:
        raise ValueError(f'self_train_init: expected one of {SELF_TRAIN_INITS}, got '
                         f'{self_train_init!r}')
    if pseudo_labels_from not in PSEUDO_LABEL_SOURCES:
        raise ValueError(f'pseudo_labels_from: expected one of {PSEUDO_LABEL_SOURCES}, '
                         f'got {pseudo_labels_from!r}')
    if uncertain_score is not None and not 0 <= uncertain_score < SELF_TRAIN_MIN_SCORE:
        raise ValueError(f'uncertain_score: expected 0 <= uncertain_score < '
                         f'{SELF_TRAIN_MIN_SCORE:g} or None, got {uncertain_score!r}')
    cfg = load_fit_config(config, cfg_options)
    if self_train:
        check_self_training(cfg, config)
    added = box_fit_options(cfg) if box_fit else []
    if added:
        echo('box-fit negatives in every training: ' + ' '.join(added))
    given = list(cfg_options)
    cfg_options = [*added, *given]
    seed_option = f'randomness.seed={seed}'
    options = [*cfg_options, seed_option]
    provisional = Run(config, osp.join(work_dir, 'provisional'), options,
                      name='provisional')
    echo('training 1: the provisional detector (the config\'s priors)')
    run_all([provisional], jobs=1, echo=echo)
    estimate_file = osp.join(work_dir, 'estimate.json')
    if not osp.isfile(estimate_file):
        echo('estimating each stage\'s share of cells from it (training split)')
        estimate_run(provisional, estimate_file)
    with open(estimate_file) as f:
        report = json.load(f)
    shares = estimated_shares(report)
    candidates = {factor: candidate_options(report, factor) for factor in factors}
    runs = {factor: Run(config, osp.join(work_dir, factor_dir(factor)),
                        [*cfg_options, *option_strings(opts), seed_option],
                        name=factor_dir(factor))
            for factor, opts in candidates.items()}
    echo(f'trainings 2-{len(runs) + 1}: the estimates times {list(factors)} (in odds)')
    run_all(list(runs.values()), jobs=jobs, echo=echo)

    keys = candidate_keys(report)
    rows = [_row(0, provisional, dict(report['trained_with']))]
    rows += [_row(i, run, {stage: candidates[factor].get(key)
                           for stage, key in keys.items()})
             for i, (factor, run) in enumerate(runs.items(), start=1)]
    trained = {run.name: run for run in (provisional, *runs.values())}
    chosen, reason = _choose(rows, echo)
    source = None
    if self_train and chosen['checkpoint']:
        ignoring = ignore_options(cfg.model.get('train_cfg'))
        if uncertain_score is not None and not ignoring:
            echo('no assigner of this config can ignore samples (mmdet\'s '
                 'ignore_iof_thr): the round learns the uncertain detections as '
                 'unlabeled as before')
        source = pseudo_label_source(rows, chosen, pseudo_labels_from, trained,
                                     work_dir, echo)
        init_from = chosen['checkpoint'] if self_train_init == 'chosen' else None
        run = self_training_run(config, work_dir, trained[chosen['name']].options, source,
                                echo, self_train_loss, uncertain_score, ignoring,
                                init_from)
        echo(f'training {len(rows) + 1}: self-training on the pseudo-labels of '
             f'{source["name"]} at the priors of {chosen["name"]}')
        run_all([run], jobs=1, echo=echo)
        trained[run.name] = run
        rows.append(_row(len(rows), run, dict(chosen['priors'])))
        learned = (f'the pseudo-labels of {source["name"]} at the priors of '
                   f'{chosen["name"]}')
        chosen, reason = _choose(rows, echo)
        if final == 'self_trained':
            chosen, reason = rows[-1], (
                f"the self-trained detector (trained on {learned}, the best of the first "
                "trainings by Lee & Liu's criterion), which the fit returns whenever it "
                'self-trains')
        elif final == 'fused':
            weights = fusion_weights(rows)
            echo(f'fusing the detections of the {len(rows)} trainings into one detector, '
                 f'their votes {[round(w, 3) for w in weights]}')
            fused = fused_run([trained[row['name']] for row in rows], work_dir,
                              weights=weights)
            trained[fused.name] = fused
            chosen, reason = dict(_row(len(rows), fused, {}), weights=weights), (
                f'the {len(rows)} trainings as one detector whose detections are fused '
                f'(FusedEnsemble: the self-trained one, which learned {learned}, has '
                f'{ROUND_SHARE:g} of the vote, the first trainings the rest in proportion '
                'to their criterion)')
    fit_checkpoint = osp.join(work_dir, 'fit_prior.pth')
    link_checkpoint(chosen['checkpoint'], fit_checkpoint)
    summary = dict(
        config=config, seed=seed, cfg_options=given, box_fit_options=added,
        factors=list(factors),
        self_train_loss=self_train_loss if self_train else None,
        uncertain_score=uncertain_score if self_train else None,
        self_train_init=self_train_init if self_train else None,
        pseudo_labels_from=pseudo_labels_from if self_train else None,
        final=final if self_train else None,
        keys=keys, estimators={
            name: stage_estimator(report, stage, ROI_ESTIMATOR, RPN_ESTIMATOR)
            for name, stage in report['stages'].items()},
        estimated_shares=shares,
        trainings=[_reported(row) for row in rows],
        fused=_reported(chosen) if chosen['name'] == 'fused' else None,
        fused_source=(_reported(source) if source is not None
                      and source['name'] == FUSED_SOURCE else None),
        chosen=chosen['name'], checkpoint=fit_checkpoint,
        chosen_config=trained[chosen['name']].config,
        chosen_cfg_options=[option for option in trained[chosen['name']].options
                            if option != seed_option],
        reason=reason)
    write_json(osp.join(work_dir, 'fit_prior.json'), summary)
    stage = main_stage(report)
    drawn = chosen if any(row is chosen for row in rows) else None
    save_figure(draw_fit(rows, drawn, stage, keys[stage], shares),
                osp.join(work_dir, 'fit_prior.png'))
    return summary


def _reported(row: dict) -> dict:
    """What ``fit_prior.json`` keeps of a row."""
    return {k: v for k, v in row.items() if k not in ('counts', 'prior')}


def pseudo_label_source(rows: List[dict], chosen: dict, pseudo_labels_from: str,
                        trained: Dict[str, Run], work_dir: str,
                        echo: Callable[[str], None]) -> dict:
    """The row whose detections the round learns (``pseudo_labels_from``, one of
    :data:`PSEUDO_LABEL_SOURCES`): the provisional's, the chosen one's, or that of the
    first trainings ``rows`` fused (:data:`FUSED_SOURCE`, their votes
    :func:`criterion_shares`; evaluated like a training, and its ``config`` given)."""
    if pseudo_labels_from == 'provisional':
        return rows[0]
    if pseudo_labels_from == 'chosen':
        return chosen
    weights = criterion_shares(rows)
    echo(f'fusing the {len(rows)} trainings for the pseudo-labels, their votes '
         f'{[round(w, 3) for w in weights]}')
    fused = fused_run([trained[row['name']] for row in rows], work_dir,
                      name=FUSED_SOURCE, weights=weights)
    return dict(_row(len(rows), fused, {}), config=fused.config)


def criterion_shares(rows: Sequence[dict]) -> List[float]:
    """Shares of a vote among ``rows`` in proportion to their ``pu_criterion`` (equal
    shares when none has one above 0)."""
    criteria = [max(row['pu_criterion'], 0.0) for row in rows]
    total = sum(criteria)
    return [c / total for c in criteria] if total > 0 else [1 / len(criteria)] * len(
        criteria)


def fusion_weights(rows: Sequence[dict]) -> List[float]:
    """Each training's share of the fused vote (docs/method.md#fused-ensemble): the
    self-trained round, the last row, :data:`ROUND_SHARE`; the first trainings the rest
    by :func:`criterion_shares`."""
    shares = criterion_shares(rows[:-1])
    return [(1 - ROUND_SHARE) * share for share in shares] + [ROUND_SHARE]


def _choose(rows: List[dict], echo: Callable[[str], None]):
    """``(row, reason)``: the best Lee & Liu criterion, or the first row when no training
    detects a labeled validation cell."""
    try:
        return choose_by_pu_criterion(rows), (
            "the best Lee & Liu criterion (recall^2 / detections per image at the test "
            'score threshold, normalised by its best over the trainings) on the '
            'validation split')
    except RuntimeError:
        for row in rows:
            row['pu_criterion'] = 0.0
        reason = ('no training detects a labeled validation cell at the test score '
                  'threshold, so the criterion cannot choose: the provisional is kept '
                  '(train longer, or check the labels)')
        echo(f'warning: {reason}')
        return rows[0], reason


def format_summary(summary: dict) -> str:
    """A table of the trainings and the choice, for the terminal."""
    lines = ['training      priors                                  val R   criterion  '
             'test F1  test AP']
    for row in summary['trainings']:
        priors = ', '.join(f'{stage} {value}' for stage, value in row['priors'].items()
                           if value is not None)
        f1, ap = row['test']['avg_f1'], row['test']['ap']
        lines.append(f'{row["name"]:13s} {priors:39s} {row["val_recall"]:.3f}   '
                     f'{row["pu_criterion"]:.3f}      '
                     f'{"-" if f1 is None else f"{f1:.3f}":7s}  '
                     f'{"-" if ap is None else f"{ap:.3f}"}')
    fused = summary.get('fused')
    if fused:
        f1, ap = fused['test']['avg_f1'], fused['test']['ap']
        votes = 'votes ' + ', '.join(f'{w:.2f}' for w in fused['weights'])
        lines.append(f'{"fused":13s} {votes:39s} {fused["val_recall"]:.3f}   '
                     f'{"-":11s}{"-" if f1 is None else f"{f1:.3f}":7s}  '
                     f'{"-" if ap is None else f"{ap:.3f}"}')
    lines.append(f'chosen: {summary["chosen"]} ({summary["reason"]}); checkpoint '
                 f'{summary["checkpoint"]}')
    if summary['chosen_config'] != summary['config']:
        what = ('the trainings fused; tools/test.py tests it with that checkpoint'
                if fused else 'the own-loss self-training')
        lines.append(f'its config: {summary["chosen_config"]} ({what})')
    if summary['chosen_cfg_options']:
        lines.append('its options: --cfg-options ' + ' '.join(summary['chosen_cfg_options']))
    return '\n'.join(lines)
