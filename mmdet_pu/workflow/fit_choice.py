"""What the prior fit (:mod:`.prior_fit`) knows of each training, the choice among them
by Lee & Liu's criterion, and their shares of a fused vote
(docs/method.md#fused-ensemble)."""
from typing import Callable, Dict, List, Sequence

from mmdet_pu.evaluation.cell_metric import dump_metric
from mmdet_pu.evaluation.metric_dump import read_metric_dump
from mmdet_pu.prior.selection import choose_by_pu_criterion, read_val_metrics
from .runs import Run

#: The self-trained round's share of the fused detector's vote; the first trainings share
#: the rest in proportion to their criterion (:func:`fusion_weights`).
ROUND_SHARE = 0.5
#: The test metrics the fit reports of every training.
TEST_METRICS = ('avg_f1', 'avg_recall', 'avg_precision', 'ap')


def training_row(index: int, run: Run, priors: Dict[str, object]) -> dict:
    """What the fit reports of one training: priors, validation and test metrics
    (``prior`` is its index: the order :func:`choose_by_pu_criterion` keeps).

    Raises:
        RuntimeError: the run left no validation dump.
    """
    val = read_val_metrics(run.work_dir)
    if val is None:
        raise RuntimeError(f'{run.work_dir}: no cell_metrics/val_per_image.json; the '
                           'config must validate at the end of training (a run stopped '
                           'in its final validation before train.py validated on '
                           'resuming: remove its run.json and cell_metrics/'
                           'test_per_image.json and run the fit again)')
    report = read_metric_dump(run.report)
    test = {name: dump_metric(report, name, optional=True) for name in TEST_METRICS}
    return dict(name=run.name, prior=index, run_dir=run.work_dir, priors=priors,
                val_recall=val['avg_recall'], val_score_thr=val['pu_score_thr'],
                val_score_thr_point=val['pu_score_thr_point'],
                counts=val['counts'], test=test, checkpoint=run.last_checkpoint())


def choose_training(rows: List[dict], echo: Callable[[str], None]):
    """``(row, reason)``: the best Lee & Liu criterion, or the first row when no training
    detects a labeled validation cell (then every row's criterion is 0)."""
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
