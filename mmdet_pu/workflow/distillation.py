"""The prior fit's distilled detector (:mod:`.prior_fit`, ``final='distilled'``;
docs/method.md#distilled-detector): the self-trained detector fine-tuned on the
confident detections of the fused one, so that the fit returns one detector, at one
detector's inference cost, instead of the fused trainings.

:func:`distilled_run` writes the fused detector's pseudo-labels on the training split
(``distill_labels.json``, cut as the round's are,
:func:`~.self_training.write_source_labels`, and guarded on resume as the round's are,
:func:`~.self_training.check_pseudo_source`) and returns the student's
:class:`~.runs.Run` (``distilled/``): the round's config and options (the chosen
priors, the box-fit options, the seed, the ignored band) with those labels instead of
the round's, starting from the round's last checkpoint (``load_from``).
:func:`returned_config` writes the config the fit returns with its checkpoint
(``distilled/distilled_config.py``): the student's as it trained (its options merged),
its validation dump recorded (:func:`~.fused_ensemble.standalone_config`), so that
``tools/test.py distilled/distilled_config.py fit_prior.pth --score-thr val`` reads the
student's threshold wherever the checkpoint lies.
"""
import os.path as osp
from typing import Callable, Optional

from cellio.atomic import write_atomic
from .fused_ensemble import dumped_config, standalone_config
from .runs import Run
from .self_training import check_pseudo_source, write_source_labels

#: The student's folder and run name.
DISTILLED = 'distilled'
#: The fused detector's pseudo-labels the student learns, in the fit's work dir.
DISTILL_LABELS = 'distill_labels.json'
#: The option that gives the training dataset its pseudo-labels.
PSEUDO_LABELS_KEY = 'train_dataloader.dataset.pseudo_labels'


def distilled_run(round_run: Run, teacher: dict, work_dir: str,
                  uncertain_thr: Optional[float], echo: Callable[[str], None]) -> Run:
    """The student (module docstring) of the self-trained ``round_run`` on the
    pseudo-labels of ``teacher`` (the fused detector's row of the fit, with its
    ``config``), the file written first if absent; ``uncertain_thr``: the round's
    lowest uncertain score (None when it ignores none), so the student ignores the
    teacher's detections in the same band.

    Raises:
        ValueError: the file holds the pseudo-labels of another checkpoint, of the
            teacher's before it changed, or of another band
            (:func:`~.self_training.check_pseudo_source`).
    """
    pseudo = osp.abspath(osp.join(work_dir, DISTILL_LABELS))
    check_pseudo_source(pseudo, teacher['checkpoint'], uncertain_thr, DISTILLED)
    if not osp.isfile(pseudo):
        write_source_labels(round_run.config, pseudo, round_run.options, teacher,
                            uncertain_thr, echo)
    options = [f'{PSEUDO_LABELS_KEY}={pseudo}' if option.startswith(f'{PSEUDO_LABELS_KEY}=')
               else option for option in round_run.options
               if not option.startswith('load_from=')]
    start = osp.abspath(round_run.last_checkpoint())
    return Run(round_run.config, osp.join(work_dir, DISTILLED),
               [*options, f'load_from={start}'], name=DISTILLED)


def returned_config(run: Run) -> str:
    """Write the config the fit returns with the trained student ``run``
    (``<its work dir>/distilled_config.py``, module docstring); returns its path."""
    path = osp.join(run.work_dir, f'{DISTILLED}_config.py')
    write_atomic(path, standalone_config(dumped_config(run)).pretty_text)
    return path
