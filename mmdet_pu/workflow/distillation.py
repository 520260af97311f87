"""The prior fit's distilled detector (:mod:`.prior_fit`, ``final='distilled'``, the
default; docs/method.md#distilled-detector): the fused trainings' detections taught to
one detector, so that the fit returns one detector, at one detector's inference cost.

:func:`distilled_run` writes the fused detector's detections on the training split as
pseudo-labels (``distill_labels.json``): those scoring at least the threshold its
validation selected (:func:`distillation_cut`: the one ``tools/test.py --score-thr val``
applies, not floored at 0.5 as the round's are: the fused vote spreads scores, and its
validation threshold is where its F1 is), and, where the config's assigners can
ignore samples, those from :data:`DISTILL_UNCERTAIN_SCORE` up to that threshold as
ignored regions; the file is guarded on resume as the round's is
(:func:`~.self_training.check_pseudo_source`, its cut included). It
returns the student's :class:`~.runs.Run` (``distilled/``): the round's config with the
detector's own classification losses (:mod:`.own_loss`: with most cells labeled, the
unlabeled samples are background, so cross entropy is the PU risk at pi ~ 0), the
round's options without its priors and pseudo-labels, those labels instead, and the
round's last checkpoint to start from (``load_from``), and no score floor
(:func:`student_floor_option`). Its scores are those of a detector trained on (nearly)
complete labels, so it is read at 0.5.
:func:`returned_config` writes the config the fit returns with its checkpoint
(``distilled/distilled_config.py``): the student's as it trained (its options merged),
its validation dump recorded (:func:`~.fused_ensemble.standalone_config`).
"""
import os.path as osp
from typing import Callable, Sequence

from mmengine.config import Config

from cellio.atomic import write_atomic
from .fit_options import SELF_TRAIN_MIN_SCORE
from .fused_ensemble import dumped_config, score_floor_key, standalone_config
from .own_loss import own_loss_options, write_own_loss_config
from .runs import Run
from .self_training import PSEUDO_LABELS_KEY, check_pseudo_source, write_source_labels

#: The student's folder and run name.
DISTILLED = 'distilled'
#: The fused detector's pseudo-labels the student learns, in the fit's work dir.
DISTILL_LABELS = 'distill_labels.json'
#: The student's config (the round's with the detector's own losses), in the work dir.
STUDENT_CONFIG = 'distilled_student_config.py'
#: The lowest score of a fused detection below the cut that the student ignores.
DISTILL_UNCERTAIN_SCORE = 0.1


def distilled_run(round_run: Run, teacher: dict, work_dir: str, ignoring: Sequence[str],
                  echo: Callable[[str], None]) -> Run:
    """The student (module docstring) of the self-trained ``round_run`` on the
    pseudo-labels of ``teacher`` (the fused detector's row of the fit, with its
    ``config``), the file written first if absent; ``ignoring``: the config's
    :func:`~.pseudo_labels.ignore_options` (none: no band is ignored).

    Raises:
        ValueError: the file holds the pseudo-labels of another checkpoint, of the
            teacher's before it changed, or of another band
            (:func:`~.self_training.check_pseudo_source`).
    """
    pseudo = osp.abspath(osp.join(work_dir, DISTILL_LABELS))
    cut = distillation_cut(teacher)
    uncertain_thr = (DISTILL_UNCERTAIN_SCORE
                     if ignoring and cut > DISTILL_UNCERTAIN_SCORE else None)
    check_pseudo_source(pseudo, teacher['checkpoint'], uncertain_thr, DISTILLED, cut)
    if not osp.isfile(pseudo):
        write_source_labels(round_run.config, pseudo, round_run.options, teacher,
                            uncertain_thr, echo, score_thr=cut)
    config = osp.join(work_dir, STUDENT_CONFIG)
    try:
        replaced = write_own_loss_config(round_run.config, config)
    except ValueError:  # the round trained with the detector's own losses already
        config, replaced = round_run.config, []
    options = [option for option in own_loss_options(round_run.options, replaced)
               if not option.startswith((f'{PSEUDO_LABELS_KEY}=', 'load_from='))
               and option not in ignoring]
    options.append(f'{PSEUDO_LABELS_KEY}={pseudo}')
    options += list(ignoring) if uncertain_thr is not None else []
    options.append(student_floor_option(config))
    start = osp.abspath(round_run.last_checkpoint())
    return Run(config, osp.join(work_dir, DISTILLED), [*options, f'load_from={start}'],
               name=DISTILLED)


def distillation_cut(teacher: dict) -> float:
    """The score from which the student learns the fused detections: the threshold the
    teacher's validation selected with the lower confidence bound of Lee & Liu's
    criterion (``val_score_thr``), else that of its point estimate, else
    :data:`~.fit_options.SELF_TRAIN_MIN_SCORE`.

    Not the point estimate first: on the few labeled cells of a sparse validation split
    it can prefer a high threshold that a handful of detections happen to pass (on one
    CRCHistoPhenotypes fit it chose 0.6 where the bound chose 0.1, and the student
    learned one pseudo-label on 594 tiles; docs/research_log.md, fifth session)."""
    for thr in (teacher.get('val_score_thr'), teacher.get('val_score_thr_point')):
        if thr is not None:
            return thr
    return SELF_TRAIN_MIN_SCORE


#: The student's score floor: it keeps every detection its head scores (up to the
#: config's ``max_per_img``), as the shipped bases do, whatever floor the fitted config
#: sets (mmdet's configs: 0.05).
STUDENT_SCORE_FLOOR = 0.0


def student_floor_option(config: str) -> str:
    """The option that has the student of ``config`` keep every detection
    (:data:`STUDENT_SCORE_FLOOR`). AP averages precision over recall up to where a
    detector's ranking stops; a floor stops it short and never changes a threshold read
    above it (0.5, the validation's choice). One detector ranks all it scores at the
    cost of its NMS; the fused detector keeps its members at
    :data:`~.fused_ensemble.MEMBER_SCORE_FLOOR`, where fusing every low detection of
    four members would multiply its inference time."""
    key = score_floor_key(Config.fromfile(config).model)
    return f'model.{key}={STUDENT_SCORE_FLOOR:g}'


def returned_config(run: Run) -> str:
    """Write the config the fit returns with the trained student ``run``
    (``<its work dir>/distilled_config.py``, module docstring); returns its path."""
    path = osp.join(run.work_dir, f'{DISTILLED}_config.py')
    write_atomic(path, standalone_config(dumped_config(run)).pretty_text)
    return path
