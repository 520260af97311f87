"""Fit the class prior of a config to its own data in at most four trainings, a fifth
that distils them into one detector and, with several classes, a sixth that guards the
classes (``tools/fit_prior.py``; the rule and its evidence:
docs/experiments.md, "A family of synthetic regimes").

Every training of a Faster R-CNN or Cascade R-CNN config (softmax ``Shared2FCBBoxHead``
RoI heads, ``RandomSampler``) learns the box-fit negatives of its labeled cells
(:func:`~.fit_options.box_fit_options`, docs/method.md#box-fit-negatives) unless
``box_fit=False``; dense detectors train as configured. In ``<work dir>``:

1. ``provisional/``: the config trained and tested as it is (its priors are a start);
2. ``estimate.json``: each stage's share of cells among the samples it draws, estimated
   from that detector on the incompletely annotated training split
   (:mod:`mmdet_pu.commands.estimate_prior`, :mod:`.estimate`; the RoI head's by
   best-bin estimation, BBE, the RPN's by the label frequency;
   docs/method.md#priors-per-stage); a dense head's and every stage's of Cascade R-CNN
   by the label frequency (:mod:`mmdet_pu.prior.label_frequency`);
3. ``x<factor>/``: one training per factor, every stage's estimate scaled by the factor
   in odds, ``pi' = f pi / (1 - pi + f pi)`` (so it stays in (0, 1)); with several
   classes each class prior is scaled and a stage's priors together kept below 1
   (:mod:`mmdet_pu.prior.candidates`);
4. the choice among the provisional and the candidate trainings by Lee & Liu's criterion
   on the validation split, r^2 / detections per image at the test score threshold
   (:func:`mmdet_pu.prior.selection.choose_by_pu_criterion`), which needs only the
   labeled cells and sees the false positives of a bold prior as well as the misses of a
   timid one;
5. ``self_trained/`` (unless ``self_train=False``): confident detections on the
   training split (score at least the threshold Lee & Liu's point estimate selected on
   their detector's validation, never below 0.5, :mod:`.pseudo_labels`) are added to
   the training labels as pseudo-labels: those of whichever of the provisional detector
   (``pseudo_labels.json``) and the chosen one (``pseudo_labels_<name>.json``) gives
   more (``pseudo_labels_from='more'``; ``'provisional'``, ``'chosen'``: that one's;
   ``'fused'``: those of the first trainings fused into one detector, ``fused_first/``,
   their votes in proportion to their criterion; where that source scores no unlabeled
   cell at its cut, the chosen detector's;
   :func:`~.self_training.round_pseudo_labels`), and the config is trained once more at the
   chosen priors (``self_train_loss='own'``: with the detector's own classification
   losses instead, :mod:`.own_loss`; ``uncertain_score``: the detections from that score
   up to the threshold are ignored regions of the round; ``self_train_init='chosen'``:
   the round fine-tunes the chosen detector; docs/method.md#self-training);
6. the fit fuses all the trainings into one ``FusedEnsemble`` (``fused/``, written by
   :mod:`.fused_ensemble`; the round has half the vote, the first trainings share the
   other half by their criterion, :func:`~.fit_choice.fusion_weights`,
   docs/method.md#fused-ensemble) and returns one detector distilled from it
   (``final='distilled'``, the default; :mod:`.distillation`,
   docs/method.md#distilled-detector): the fused detections on the training split above
   their validation threshold become ``distill_labels.json`` (those from 0.1 up to it
   ignored), and the self-trained detector is fine-tuned on them with its own loss
   (``distilled/``), returned with ``distilled/distilled_config.py`` and read at 0.5.
   ``final='fused'``: the fused detector itself (the trainings' inference cost
   together); ``final='self_trained'``: the self-trained detector alone,
   ``final='criterion'``: the training with the best criterion;
7. the class guard (``guard='auto'``: with several classes; :mod:`.class_guard`,
   docs/method.md#class-guard): ``reference/``, the config with the detector's own
   classification losses, trains beside step 3; a class it ranks better on the labeled
   validation cells (a paired bootstrap over the images) is taken from it, and the fit
   returns ``guarded/``, a ``FusedEnsemble`` of its detector and the reference with
   votes per class.

It leaves ``fit_prior.pth`` (a hard link to the chosen run's last checkpoint, a copy on
another file system) with its config ``fit_prior_config.py``
(:func:`~.fit_report.write_returned_config`: ``tools/test.py``, ``tools/infer_slide.py``
take the two whatever the fit chose), ``fit_prior.json`` (the estimates, every training's priors,
validation recall, criterion and test metrics, those of the fused detector under
``fused`` and of the distilled one under ``distilled`` when the fit made them, those of
``fused_first/`` under ``fused_source`` when the round learned it, the guard's
comparison under ``guard`` and the guarded detector under ``guarded``, the choice and why;
``chosen_config`` with ``chosen_cfg_options`` tests the returned detector) and
``fit_prior.png`` (the criterion and the validation recall against the prior of the
main stage, :func:`mmdet_pu.prior.estimate_file.main_stage`).
Runs are resumable (:class:`~.runs.Run`): the same command continues an interrupted fit.
"""
import os.path as osp
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence

from mmdet_pu.prior.candidates import (ROI_ESTIMATOR, RPN_ESTIMATOR, candidate_keys,
                                       candidate_options, estimated_shares, option_strings,
                                       stage_estimator)
from mmdet_pu.prior.estimate_file import main_stage, read_estimate
from .class_guard import (GUARD_LEVEL, GUARDED, compare_classes, describe, flagged,
                          guard_summary, guarded_run, guards, reference_run)
from .distillation import DISTILLED, distilled_run, returned_config
from .estimate import estimate_run
from .fit_choice import ROUND_SHARE, choose_training, fusion_weights, training_row
from .fit_options import (DEFAULT_FACTORS, SelfTraining, box_fit_options,
                          check_fit_arguments, factor_dir, load_fit_config)
from .fit_report import (FIT_SUMMARY, draw_fit, link_checkpoint, reported,
                         write_returned_config)
from .fused_ensemble import fused_run
from .pseudo_labels import ignore_options
from .reports import save_figure, write_json
from .runs import Run, run_all
from .self_training import (FUSED_SOURCE, check_round_source, check_self_training,
                            pseudo_label_source, round_pseudo_labels, self_training_run)


#: The keys of ``fit_prior.json`` that report the self-training round's choices, and the
#: fields of :class:`~.fit_options.SelfTraining` they hold (None without a round).
ROUND_FIELDS = dict(self_train_loss='loss', uncertain_score='uncertain_score',
                    self_train_init='init', pseudo_labels_from='pseudo_labels_from',
                    final='final')
#: The keys of ``fit_prior.json`` that report the detectors the fit made beside its
#: trainings, and their names (None when it made none).
MADE_ENTRIES = dict(fused='fused', distilled=DISTILLED, fused_source=FUSED_SOURCE,
                    guarded=GUARDED)


class Trainings(NamedTuple):
    """The trainings of a fit so far: the estimate report they come from, their rows
    (:func:`~.fit_choice.training_row`, in order), their runs by name and the class
    guard's reference training (:mod:`.class_guard`; None when the fit does not guard)."""
    report: dict
    rows: List[dict]
    runs: Dict[str, Run]
    reference: Optional[Run] = None


def first_trainings(config: str, work_dir: str, cfg_options: Sequence[str],
                    seed_option: str, factors: Sequence[float], jobs: int,
                    echo: Callable[[str], None], guard: str = 'off') -> Trainings:
    """Steps 1-3 of the fit (module docstring): the provisional training, the estimate
    from it (``estimate.json``, kept when present) and one training per factor, beside
    them the class guard's reference when ``guard`` (one of
    :data:`~.class_guard.GUARD_CHOICES`) asks for it with the estimate's classes."""
    provisional = Run(config, osp.join(work_dir, 'provisional'),
                      [*cfg_options, seed_option], name='provisional')
    echo('training 1: the provisional detector (the config\'s priors)')
    run_all([provisional], jobs=1, echo=echo)
    estimate_file = osp.join(work_dir, 'estimate.json')
    if not osp.isfile(estimate_file):
        echo('estimating each stage\'s share of cells from it (training split)')
        estimate_run(provisional, estimate_file)
    report = read_estimate(estimate_file).report
    candidates = {factor: candidate_options(report, factor) for factor in factors}
    runs = {factor: Run(config, osp.join(work_dir, factor_dir(factor)),
                        [*cfg_options, *option_strings(opts), seed_option],
                        name=factor_dir(factor))
            for factor, opts in candidates.items()}
    echo(f'trainings 2-{len(runs) + 1}: the estimates times {list(factors)} (in odds)')
    reference = (reference_run(config, work_dir, provisional.options)
                 if guards(guard, len(report['classes'])) else None)
    if reference is not None:
        echo(f'training {len(runs) + 2}: the class guard\'s reference, the config with the '
             'detector\'s own classification loss')
    run_all([*runs.values(), *([reference] if reference else [])], jobs=jobs, echo=echo)
    keys = candidate_keys(report)
    rows = [training_row(0, provisional, dict(report['trained_with']))]
    rows += [training_row(i, run, {stage: candidates[factor].get(key)
                                   for stage, key in keys.items()})
             for i, (factor, run) in enumerate(runs.items(), start=1)]
    return Trainings(report, rows, {run.name: run for run in (provisional, *runs.values())},
                     reference)


def self_training_round(config: str, work_dir: str, cfg, trainings: Trainings,
                        chosen: dict, round_: SelfTraining, echo: Callable[[str], None]):
    """Steps 5-6 of the fit: the self-training round on the pseudo-labels of its source
    at the priors of ``chosen``, added to ``trainings``, then what the fit returns
    (:func:`returned_detector`). Returns ``(chosen row, reason, made)``: ``made`` holds
    the rows of the detectors the fit made beside its trainings, by name
    (:data:`~.self_training.FUSED_SOURCE`, ``'fused'``, ``'distilled'``: those made)."""
    rows, trained = trainings.rows, trainings.runs
    ignoring = ignore_options(cfg.model.get('train_cfg'))
    if round_.uncertain_score is not None and not ignoring:
        echo('no assigner of this config can ignore samples (mmdet\'s '
             'ignore_iof_thr): the round learns the uncertain detections as '
             'unlabeled as before')
    configured = pseudo_label_source(rows, chosen, round_.pseudo_labels_from, trained,
                                     work_dir, echo)
    sources = [configured, *([chosen] if configured['name'] != chosen['name'] else [])]
    options = trained[chosen['name']].options
    uncertain_thr = round_.uncertain_score if ignoring else None
    source, pseudo, counts = round_pseudo_labels(
        config, work_dir, options, sources, uncertain_thr, echo,
        more=round_.pseudo_labels_from == 'more')
    init_from = chosen['checkpoint'] if round_.init == 'chosen' else None
    run = self_training_run(config, work_dir, options, pseudo, round_.loss,
                            uncertain_thr, ignoring, init_from)
    check_round_source(run, pseudo)
    echo(f'training {len(rows) + 1}: self-training on the pseudo-labels of '
         f'{source["name"]} at the priors of {chosen["name"]}')
    run_all([run], jobs=1, echo=echo)
    trained[run.name] = run
    rows.append(dict(training_row(len(rows), run, dict(chosen['priors'])),
                     pseudo_labels_of=source['name'], pseudo_labels=counts))
    made = {FUSED_SOURCE: configured} if configured['name'] == FUSED_SOURCE else {}
    learned = f'the pseudo-labels of {source["name"]} at the priors of {chosen["name"]}'
    chosen, reason = returned_detector(work_dir, trainings, round_.final, learned, made,
                                       ignoring, echo)
    return chosen, reason, made


def returned_detector(work_dir: str, trainings: Trainings, final: str, learned: str,
                      made: Dict[str, dict], ignoring: Sequence[str],
                      echo: Callable[[str], None]):
    """Step 6 of the fit, once the round (the last of ``trainings``, which learned
    ``learned``) is trained: ``(row, reason)`` of what the fit returns (``final``, one
    of :data:`~.fit_options.FINAL_CHOICES`); the fused and the distilled detectors'
    rows, with their ``config``, are added to ``made`` (``ignoring``: the config's
    :func:`~.pseudo_labels.ignore_options`, with which the distilled one ignores the
    fused detector's uncertain detections)."""
    rows, trained = trainings.rows, trainings.runs
    chosen, reason = choose_training(rows, echo)
    if final == 'criterion':
        return chosen, reason
    if final == 'self_trained':
        return rows[-1], (
            f"the self-trained detector (trained on {learned}, the best of the first "
            "trainings by Lee & Liu's criterion), which the fit returns whenever it "
            'self-trains')
    weights = fusion_weights(rows)
    echo(f'fusing the detections of the {len(rows)} trainings into one detector, '
         f'their votes {[round(w, 3) for w in weights]}')
    fused = fused_run([trained[row['name']] for row in rows], work_dir, weights=weights)
    trained[fused.name] = fused
    made[fused.name] = dict(training_row(len(rows), fused, {}), weights=weights,
                            config=fused.config)
    fusion = (f'the {len(rows)} trainings as one detector whose detections are fused '
              f'(FusedEnsemble: the self-trained one, which learned {learned}, has '
              f'{ROUND_SHARE:g} of the vote, the first trainings the rest in proportion '
              'to their criterion)')
    if final == 'fused':
        return made[fused.name], fusion
    student = distilled_run(trained[rows[-1]['name']], made[fused.name], work_dir,
                            ignoring, echo)
    echo(f'training {len(rows) + 1}: the self-trained detector fine-tuned with its own '
         'loss on the fused detections above their validation threshold')
    run_all([student], jobs=1, echo=echo)
    trained[student.name] = student
    made[student.name] = dict(training_row(len(rows) + 1, student, {}),
                              config=returned_config(student))
    return made[student.name], (
        'one detector distilled from the fused one: the self-trained detector '
        'fine-tuned with its own loss on the detections above their validation '
        f'threshold on the training split of {fusion}')


def guard_classes(work_dir: str, trainings: Trainings, chosen: dict, reason: str,
                  made: Dict[str, dict], echo: Callable[[str], None]):
    """Step 7 of the fit (:mod:`.class_guard`): ``chosen`` (the detector the fit
    returns so far) against the reference, class by class. Returns ``(row, reason,
    report)``: ``chosen`` and ``reason`` unchanged when the reference ranks no class
    better, else the guarded detector's row (added to ``made`` and the runs) and the
    reason extended; ``report`` is the ``guard`` entry of ``fit_prior.json``."""
    reference, classes = trainings.reference, trainings.report['classes']
    detector_run = trainings.runs[chosen['name']]
    comparisons = compare_classes(detector_run.work_dir, reference)
    echo(f'the class guard: {chosen["name"]} against the reference, per class on the '
         'labeled validation cells')
    describe(classes, comparisons, echo)
    from_reference = flagged(comparisons)
    reference_row = reported(training_row(len(trainings.rows), reference, {}))
    if not any(from_reference):
        echo(f'no class is ranked better by the reference: the fit returns {chosen["name"]}')
        return chosen, reason, guard_summary(classes, comparisons, from_reference,
                                             reference_row, None)
    names = [name for name, flag in zip(classes, from_reference) if flag]
    echo(f'{", ".join(names)} from the reference: one FusedEnsemble of {chosen["name"]} '
         'and the reference with votes per class')
    guarded = guarded_run(chosen, detector_run, reference, from_reference, work_dir)
    trainings.runs[guarded.name] = guarded
    made[guarded.name] = dict(training_row(len(trainings.rows), guarded, {}),
                              config=guarded.config)
    reason = (f'{reason}; {", ".join(names)} from the reference (the config with the '
              "detector's own loss), which ranks their labeled validation cells better "
              f'in at least {GUARD_LEVEL:.0%} of bootstrap resamples')
    return made[guarded.name], reason, guard_summary(classes, comparisons, from_reference,
                                                     reference_row, guarded.name)


def fit_summary(config: str, seed: int, given: Sequence[str], added: Sequence[str],
                factors: Sequence[float], round_: Optional[SelfTraining],
                trainings: Trainings, chosen: dict, made: Dict[str, dict],
                checkpoint: str, reason: str, guard: Optional[dict] = None) -> dict:
    """The content of ``fit_prior.json`` (module docstring); ``round_`` is None for a
    fit without self-training, ``made`` the rows of the detectors it made beside its
    trainings (:func:`self_training_round`). A returned row with its own ``config``
    (the fused or the distilled detector) is tested with that config alone."""
    report, seed_option = trainings.report, f'randomness.seed={seed}'
    returned = trainings.runs[chosen['name']]
    options = [] if 'config' in chosen else [option for option in returned.options
                                             if option != seed_option]
    return dict(
        config=config, seed=seed, cfg_options=list(given), box_fit_options=list(added),
        factors=list(factors),
        **{key: None if round_ is None else getattr(round_, field)
           for key, field in ROUND_FIELDS.items()},
        keys=candidate_keys(report), estimators={
            name: stage_estimator(report, stage, ROI_ESTIMATOR, RPN_ESTIMATOR)
            for name, stage in report['stages'].items()},
        estimated_shares=estimated_shares(report),
        trainings=[reported(row) for row in trainings.rows],
        **{key: reported(made[name]) if name in made else None
           for key, name in MADE_ENTRIES.items()},
        chosen=chosen['name'], checkpoint=checkpoint,
        chosen_config=chosen.get('config', returned.config), chosen_cfg_options=options,
        reason=reason, guard=guard)


def fit_prior(config: str, work_dir: str, cfg_options: Sequence[str] = (), seed: int = 0,
              factors: Sequence[float] = DEFAULT_FACTORS, jobs: int = 1,
              self_train: bool = True, echo: Callable[[str], None] = print,
              self_train_loss: str = 'pu', final: str = 'distilled',
              box_fit: bool = True,
              uncertain_score: Optional[float] = None,
              self_train_init: str = 'scratch',
              pseudo_labels_from: str = 'more', guard: str = 'auto') -> dict:
    """Run the fit (module docstring) and write its outputs; returns the summary.

    ``box_fit``: every training of a Faster R-CNN or Cascade R-CNN config learns
    box-fit negatives (:func:`~.fit_options.box_fit_options`, put before
    ``cfg_options``).

    ``self_train_loss``: the self-training round's classification loss, one of
    :data:`~.fit_options.SELF_TRAIN_LOSSES`: the config's PU losses at the chosen priors
    (``'pu'``) or the detector's own (``'own'``, :mod:`.own_loss`). ``final``: what the
    fit returns when it self-trains, one of :data:`~.fit_options.FINAL_CHOICES`.
    ``uncertain_score``: the lowest score of the detections the round ignores (e.g.
    :data:`~.fit_options.SELF_TRAIN_UNCERTAIN_SCORE`; None: none; a config without an
    assigner that can ignore, :func:`~.pseudo_labels.ignore_options`, ignores none).
    ``self_train_init``: where the round starts, one of
    :data:`~.fit_options.SELF_TRAIN_INITS`. ``pseudo_labels_from``: whose detections the
    round learns, one of :data:`~.fit_options.PSEUDO_LABEL_SOURCES`. ``guard``: whether
    the fit trains the reference and takes from it the classes it ranks better
    (:mod:`.class_guard`), one of :data:`~.class_guard.GUARD_CHOICES` (``'auto'``: with
    several classes).

    Raises:
        ValueError: a factor <= 0, an unknown ``self_train_loss``, ``final``,
            ``self_train_init``, ``pseudo_labels_from`` or ``guard``, an ``uncertain_score``
            outside [0, :data:`~.fit_options.SELF_TRAIN_MIN_SCORE`), or a work dir
            holding runs or pseudo-labels of other options, or pseudo-labels of a
            checkpoint changed since (:func:`~.self_training.check_pseudo_source`).
        RuntimeError: a training or the estimate failed, or no training detects a
            labeled validation cell (the criterion cannot choose).
    """
    round_ = SelfTraining(self_train_loss, final, uncertain_score, self_train_init,
                          pseudo_labels_from)
    check_fit_arguments(factors, round_)
    cfg = load_fit_config(config, cfg_options)
    if self_train:
        check_self_training(cfg, config)
    added = box_fit_options(cfg) if box_fit else []
    if added:
        echo('box-fit negatives in every training: ' + ' '.join(added))
    guards(guard, 1)  # an unknown choice fails before any training
    trainings = first_trainings(config, work_dir, [*added, *cfg_options],
                                f'randomness.seed={seed}', factors, jobs, echo, guard)
    chosen, reason = choose_training(trainings.rows, echo)
    made = {}
    if self_train and chosen['checkpoint']:
        chosen, reason, made = self_training_round(config, work_dir, cfg, trainings,
                                                   chosen, round_, echo)
    guard_report = None
    if trainings.reference is not None and chosen['checkpoint']:
        chosen, reason, guard_report = guard_classes(work_dir, trainings, chosen, reason,
                                                     made, echo)
    checkpoint = osp.join(work_dir, 'fit_prior.pth')
    link_checkpoint(chosen['checkpoint'], checkpoint)
    summary = fit_summary(config, seed, cfg_options, added, factors,
                          round_ if self_train else None, trainings, chosen, made,
                          checkpoint, reason, guard_report)
    summary['returned_config'] = write_returned_config(
        chosen, trainings.runs[chosen['name']], work_dir)
    write_json(osp.join(work_dir, FIT_SUMMARY), summary)
    stage = main_stage(trainings.report)
    drawn = chosen if any(row is chosen for row in trainings.rows) else None
    save_figure(draw_fit(trainings.rows, drawn, stage, summary['keys'][stage],
                         summary['estimated_shares']),
                osp.join(work_dir, 'fit_prior.png'))
    return summary
