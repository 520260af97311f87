"""The prior fit's class guard (:mod:`.prior_fit`, docs/method.md#class-guard): no class
ranked worse than the detector's own loss ranks it.

The fit trains the config once more with the detector's own classification losses
(:mod:`.own_loss`: cross entropy, focal) on the same labels, its *reference*
(``reference/``, beside the provisional training). Once the fit has its detector, each
class's ranking of the labeled validation cells is compared with the reference's by a
paired bootstrap over the validation images (:func:`~mmdet_pu.evaluation.
paired_bootstrap.compare_ap`): a class the reference ranks better in at least
:data:`GUARD_LEVEL` of the resamples is taken from the reference. The fit then returns
``guarded/``, a ``FusedEnsemble`` of the fit's detector (its members, if it is one) and
the reference with votes per class: each class from the detector that ranks it, the
reference's scores of its classes mapped by ``s ** e`` with ``e`` the exponent that
reads the reference's validation threshold as 0.5
(:func:`~mmdet_pu.models.detectors.box_fusion.threshold_exponent`), as the fit's
detector is read. Its members keep every score (the reference, trained to call the
unlabeled cells background, scores most cells below mmdet's 0.05).
"""
import os.path as osp
from typing import Callable, List, Optional, Sequence

from mmengine.config import Config

from mmdet_pu.evaluation.cell_metric import report_path
from mmdet_pu.evaluation.metric_dump import read_validation_thr
from mmdet_pu.evaluation.paired_bootstrap import ClassComparison, compare_ap
from mmdet_pu.models.detectors.box_fusion import member_weights, threshold_exponent
from mmdet_pu.prior.keys import type_name
from .distillation import STUDENT_SCORE_FLOOR
from .fused_ensemble import FUSION_IOU, dumped_config, ensemble_config, ensemble_run
from .own_loss import own_loss_options, write_own_loss_config
from .runs import Run

#: The reference training's folder and run name, and the guarded detector's.
REFERENCE, GUARDED = 'reference', 'guarded'
#: The share of bootstrap resamples in which the reference must rank a class's labeled
#: validation cells better for the class to be taken from it.
GUARD_LEVEL = 0.95
#: Bootstrap resamples of the validation images, and their seed.
GUARD_RESAMPLES, GUARD_SEED = 1000, 0
#: When the fit guards its classes: ``'auto'`` with several classes, ``'on'``, ``'off'``.
GUARD_CHOICES = ('auto', 'on', 'off')


def guards(guard: str, num_classes: int) -> bool:
    """Whether a fit with ``guard`` (one of :data:`GUARD_CHOICES`) and ``num_classes``
    classes trains the reference and guards its classes."""
    if guard not in GUARD_CHOICES:
        raise ValueError(f'guard: expected one of {GUARD_CHOICES}, got {guard!r}')
    return guard == 'on' or (guard == 'auto' and num_classes > 1)


def reference_run(config: str, work_dir: str, options: Sequence[str]) -> Run:
    """The reference: ``config`` with the detector's own classification losses
    (``reference_config.py`` in ``work_dir``) trained with ``options`` (the provisional
    training's) less those inside the replaced losses (the priors)."""
    own_config = osp.join(work_dir, f'{REFERENCE}_config.py')
    replaced = write_own_loss_config(config, own_config)
    return Run(own_config, osp.join(work_dir, REFERENCE),
               own_loss_options(options, replaced), name=REFERENCE)


def compare_classes(detector_dir: str, reference: Run) -> List[ClassComparison]:
    """Per class, the detector in ``detector_dir`` (``a``) against the reference
    (``b``) on their validation dumps (:func:`~mmdet_pu.evaluation.paired_bootstrap.
    compare_ap`)."""
    return compare_ap(report_path(detector_dir, 'val'), report_path(reference.work_dir, 'val'),
                      GUARD_RESAMPLES, GUARD_SEED)


def reference_exponent(reference: Run) -> float:
    """The score exponent that reads the reference's validation threshold as 0.5 (1 when
    its validation selected none)."""
    threshold = read_validation_thr(report_path(reference.work_dir, 'val'))
    return threshold_exponent(threshold) if threshold and 0 < threshold < 1 else 1.0


def guarded_run(detector: dict, detector_run: Run, reference: Run,
                from_reference: Sequence[bool], work_dir: str) -> Run:
    """``guarded/`` (module docstring): the fit's ``detector`` (its row, with its
    ``config`` for a fused or distilled one; ``detector_run`` its run) and the
    ``reference``, the classes flagged in ``from_reference`` from the reference."""
    config = detector.get('config') or dumped_config(detector_run)
    model = Config.fromfile(config).model
    if type_name(model) == 'FusedEnsemble':
        members = list((detector_run.record() or {})['members'])
        votes = member_weights(model.get('weights'), len(members))
    else:
        members, votes = [detector['checkpoint']], (1.0, )
    exponent = reference_exponent(reference)
    weights = [[0.0 if guarded else _class_vote(vote, c)
                for c, guarded in enumerate(from_reference)] for vote in votes]
    weights.append([float(guarded) for guarded in from_reference])
    exponents = [[1.0] * len(from_reference) for _ in votes]
    exponents.append([exponent if guarded else 1.0 for guarded in from_reference])
    members.append(reference.last_checkpoint())

    def make_config() -> Config:
        return ensemble_config(config, len(members), FUSION_IOU, weights, exponents,
                               score_floor=STUDENT_SCORE_FLOOR)

    return ensemble_run(osp.join(work_dir, GUARDED), GUARDED, members, make_config,
                        dict(weights=weights, score_exponents=exponents))


def _class_vote(vote, label: int) -> float:
    """A member's vote for class ``label`` (its weights shared or per class)."""
    return float(vote[label] if isinstance(vote, tuple) else vote)


def guard_summary(classes: Sequence[str], comparisons: Sequence[ClassComparison],
                  from_reference: Sequence[bool], reference_row: dict,
                  guarded_name: Optional[str]) -> dict:
    """What ``fit_prior.json`` reports of the guard (under ``guard``)."""
    return dict(
        level=GUARD_LEVEL, resamples=GUARD_RESAMPLES, reference=reference_row,
        classes={name: dict(val_ap=c.ap_a, reference_val_ap=c.ap_b,
                            reference_better=c.b_better, from_reference=flag)
                 for name, c, flag in zip(classes, comparisons, from_reference)},
        returned=guarded_name)


def flagged(comparisons: Sequence[ClassComparison]) -> List[bool]:
    """The classes the reference ranks better in at least :data:`GUARD_LEVEL` of the
    resamples."""
    return [c.b_better >= GUARD_LEVEL for c in comparisons]


def describe(classes: Sequence[str], comparisons: Sequence[ClassComparison],
             echo: Callable[[str], None]) -> None:
    """Print the comparison, one class a line."""
    for name, c in zip(classes, comparisons):
        echo(f'  {name}: validation AP on the labeled cells {c.ap_a:.4f}, the '
             f'reference {c.ap_b:.4f}; the reference better in {c.b_better:.0%} of '
             f'{GUARD_RESAMPLES} resamples')
