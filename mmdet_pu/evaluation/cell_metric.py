"""Cell detection metric of the paper: per-image and pooled recall, precision, F1 (Section 3),
and the average precision of the ranked detections.

For every test image and every class, detections with ``score >= score_thr`` are matched
greedily to the ground truth (:mod:`mmdet_pu.evaluation.matching`), giving TP, FP and FN
counts, and

    recall = TP / (TP + FN),   precision = TP / (TP + FP),   F1 = 2 TP / (2 TP + FP + FN).

The paper's "average recall / precision / F1" is the mean of these per-image values over
the test images. The pooled (micro) values use the TP/FP/FN counts summed over the set.

Undefined values (a zero denominator) are NaN and left out of the mean over images:

* an image without ground truth of a class has no recall for it, one without predictions
  of the class has no precision for it; an image with neither has no F1 either;
* F1 is defined whenever the image has ground truth or predictions (it is 0 for an image
  with false positives only, or with misses only), which equals the harmonic mean of
  recall and precision whenever both are defined.

Excluding undefined values rather than scoring them 1.0 keeps the average a statement
about images that contain something to detect: in multi-class data many images lack a
class, and counting each as perfect would inflate that class's average by the share of
such images instead of measuring the detector. A quantity that is undefined for every
image is reported as NaN.

Ignored ground truth (``iscrowd`` annotations, mmdet's ``ignored_instances``: e.g.
CRCHistoPhenotypes' nuclei without a class) is don't-care: a detection that is no true
positive but passes the criterion with an ignored region is left out of every count and
of the ranking, and an ignored region is never a false negative
(:func:`~mmdet_pu.evaluation.matching.dont_care`).

AP separates the detector's ranking from the calibration of its threshold: every
detection the model outputs (its own test ``score_thr``, not the metric's), matched by
the same criterion, ranked by score over the whole set per class
(:func:`~mmdet_pu.evaluation.rates.average_precision`, all-point interpolation). The
matching of all detections also gives the counts at any threshold
(:mod:`mmdet_pu.evaluation.rates`): at ``score_thr``, at each candidate threshold, and,
from the per-image dump, at a threshold chosen later (the validation threshold of
:mod:`studies.comparison`).
"""
import csv
import numbers
import os.path as osp
from typing import Optional, Sequence

import numpy as np
from mmengine.evaluator import BaseMetric
from mmengine.logging import MessageHub, MMLogger, print_log

from mmdet.registry import METRICS
from cellio.atomic import atomic_open, write_json_atomic
from .classes_merged import confusion_matrix, match_classes_merged
from .matching import (ERROR_KINDS, count_per_class, dont_care, error_kinds, match_image,
                       to_numpy)
from .rates import RATES, average_precision, counts_at, detection_rates, nanmean
from .score_threshold import pu_threshold_criterion, select_score_thr

#: The folder of the per-image dumps in a Runner's work dir.
DUMP_DIR = 'cell_metrics'
#: Per image, the ranked detections: scores (descending), classes and TP flags.
RANKED = ('scores', 'labels', 'matched')
#: The metric names (after the prefix) of the detection with the classes merged.
CLASSES_MERGED = 'classes_merged'


def report_path(work_dir: str, stage: str = 'test') -> str:
    """Where the metric, run by a Runner in ``work_dir``, dumps the per-image values of
    ``stage`` (``'val'`` or ``'test'``)."""
    return osp.join(work_dir, DUMP_DIR, f'{stage}_per_image.json')


def dump_metric(report: dict, name: str, optional: bool = False):
    """A summary value of a per-image dump (the JSON :class:`CellDetMetric` writes) by
    its unprefixed name (``'cell0/avg_recall'``, ``'pu_score_thr'``):
    ``report['metrics']['<prefix>/<name>']``, None for NaN.

    Raises:
        KeyError: the dump has no such value, unless ``optional`` (then None: an older
            dump, a metric without score-threshold candidates).
    """
    head = f'{report["prefix"]}/' if report.get('prefix') else ''
    if optional:
        return report['metrics'].get(head + name)
    return report['metrics'][head + name]


@METRICS.register_module()
class CellDetMetric(BaseMetric):
    """Per-image and pooled recall, precision and F1 of cell detections, per class.

    Each data sample must hold ``pred_instances`` (``bboxes``, ``scores``, ``labels`` in
    original image coordinates, as returned by mmdet detectors) and ``gt_instances``
    (``bboxes``, ``labels``; in the test pipeline load annotations after any resize, as
    mmdet's own configs do, so that they are in original coordinates too).

    Metric names (with the default prefix ``cell``), for each class name ``<c>``:
    ``cell/<c>/avg_{recall,precision,f1}`` (mean over images),
    ``cell/<c>/pooled_{recall,precision,f1}`` (from summed counts),
    ``cell/<c>/{tp,fp,fn}``, ``cell/<c>/fp_{duplicate,class,box,background}`` (the
    false positives at ``score_thr`` by kind, :func:`~mmdet_pu.evaluation.matching.
    error_kinds`), ``cell/<c>/ap`` (AP of the class's ranked detections over the set),
    ``cell/<c>/max_recall`` (the pooled recall of every detection, whatever its score:
    where the class's precision-recall curve, and so AP, stops; a low AP with a low
    ``max_recall`` is boxes that miss the cells, not a bad ranking), and the means over
    classes ``cell/avg_{recall,precision,f1}``, ``cell/pooled_{recall,precision,f1}``,
    ``cell/ap`` and ``cell/max_recall`` (classes absent from the set, NaN, are left
    out). Prior selection uses ``cell/avg_recall`` (Section 2.3).

    With more than one class, finding cells and classifying them are also measured
    apart (:mod:`mmdet_pu.evaluation.classes_merged`): ``cell/classes_merged/avg_{recall,
    precision,f1}``, ``cell/classes_merged/pooled_{recall,precision,f1}`` and
    ``cell/classes_merged/ap`` of the detections with the classes merged against every
    cell, and ``cell/class_accuracy``, the share of the cells found at ``score_thr`` that
    were given their class; the dump holds their ``confusion`` matrix.

    With ``score_thr_candidates`` the metric also selects a score threshold for data
    whose labels are incomplete (a validation set): for every candidate it counts the
    labeled cells found and the detections kept, and reports the candidate that
    maximises Lee & Liu's PU criterion ``recall^2 / detections per image``, the recall
    taken at its lower confidence bound (:mod:`mmdet_pu.evaluation.score_threshold`), as
    ``cell/pu_score_thr`` (NaN when no candidate finds a labeled cell).
    ``tools/test.py --score-thr val`` tests with it, as does a test metric configured
    with ``score_thr='val'`` (resolved by ``tools/test.py``).

    Args:
        score_thr (float): detections with a lower score are discarded, in [0, 1].
            Defaults to 0.5.
        iou_thr (float): a detection matches a ground truth with IoU ``>= iou_thr``.
            Defaults to 0.5.
        radius (float, optional): if set, match by centre distance ``<= radius`` pixels
            instead of IoU (MITOS-ATYPIA-14: 32 px, TUPAC: 30 px). Defaults to None.
        dump_per_image (bool): write the per-image counts and values to
            ``<dump dir>/<stage>_per_image.json`` and ``.csv`` (``stage`` is ``val`` or
            ``test``, the loop that runs; files are overwritten by the next evaluation of
            the same stage). The JSON holds the settings, ``prefix``, ``metrics`` (the
            logged names and values, NaN as null), ``score_thr_selection`` (with
            candidates: their ``criterion`` per class, the ``confidence``, the
            ``chosen`` one and ``chosen_point``, the point estimate's choice) and
            ``images`` (per image: ``img_id``,
            ``img_path``, per-class lists ``tp``, ``fp``, ``fn``, ``recall``,
            ``precision``, ``f1``, ``ap`` and ``detections``, the ranked detections:
            ``scores`` in descending order, ``labels``, ``matched`` (TP flags) and
            ``kinds`` (indices into the report's ``kinds`` list));
            ``tools/compare.py`` and ``tools/sweep_prior.py`` read it. Defaults to True.
        out_dir (str, optional): the dump dir. Defaults to ``<work_dir>/cell_metrics`` of
            the running mmengine Runner (found through its log file,
            ``<work_dir>/<timestamp>/<timestamp>.log``); outside a Runner nothing is
            dumped unless ``out_dir`` is given. Several Runners created in one process
            with the same experiment name share mmengine's logger, hence this folder:
            give them distinct experiment names or set ``out_dir``.
        score_thr_candidates (sequence of float, optional): thresholds among which
            ``cell/pu_score_thr`` is selected; the dump holds the criterion of each.
            Defaults to None (no selection).
        score_thr_confidence (float, optional): the one-sided confidence of the lower
            bound of the labeled recall in the criterion, in (0, 1); None for the point
            estimate (Lee & Liu's own, unreliable with few labeled cells). Defaults to
            0.95.
        collect_device (str): ``'cpu'`` or ``'gpu'``, for distributed collection.
        prefix (str, optional): metric name prefix. Defaults to ``'cell'``.
    """
    default_prefix: Optional[str] = 'cell'

    def __init__(self,
                 score_thr: float = 0.5,
                 iou_thr: float = 0.5,
                 radius: Optional[float] = None,
                 dump_per_image: bool = True,
                 out_dir: Optional[str] = None,
                 score_thr_candidates: Optional[Sequence[float]] = None,
                 score_thr_confidence: Optional[float] = 0.95,
                 collect_device: str = 'cpu',
                 prefix: Optional[str] = None) -> None:
        super().__init__(collect_device=collect_device, prefix=prefix)
        if not 0 < iou_thr <= 1:
            raise ValueError(f'CellDetMetric: iou_thr must be in (0, 1], got {iou_thr}')
        self.iou_thr = iou_thr
        if score_thr == 'val':
            raise ValueError(
                "CellDetMetric: score_thr='val' is resolved by tools/test.py from the "
                'validation dump beside the checkpoint; run the test through it, or '
                'give a number')
        if isinstance(score_thr, bool) or not isinstance(score_thr, numbers.Real) \
                or not 0 <= score_thr <= 1:
            raise ValueError(
                f'CellDetMetric: score_thr must be a score in [0, 1], got {score_thr!r}')
        self.score_thr = score_thr
        if radius is not None and radius <= 0:
            raise ValueError(f'CellDetMetric: radius must be positive, got {radius}')
        self.radius = radius
        if score_thr_candidates is not None:
            score_thr_candidates = [float(t) for t in score_thr_candidates]
            if not score_thr_candidates or score_thr_candidates != sorted(
                    set(score_thr_candidates)) or not 0 <= score_thr_candidates[0] \
                    or not score_thr_candidates[-1] <= 1:
                raise ValueError('CellDetMetric: score_thr_candidates must be increasing '
                                 f'scores in [0, 1], got {score_thr_candidates}')
        self.score_thr_candidates = score_thr_candidates
        if score_thr_confidence is not None and not 0 < score_thr_confidence < 1:
            raise ValueError('CellDetMetric: score_thr_confidence must be in (0, 1) or '
                             f'None, got {score_thr_confidence!r}')
        self.score_thr_confidence = score_thr_confidence
        self.dump_per_image = dump_per_image
        self.out_dir = out_dir

    @property
    def classes(self) -> tuple:
        if not self.dataset_meta or 'classes' not in self.dataset_meta:
            raise RuntimeError('CellDetMetric needs dataset_meta["classes"]; the loop '
                               'sets it from the dataset metainfo')
        return tuple(self.dataset_meta['classes'])

    def process(self, data_batch: dict, data_samples: Sequence[dict]) -> None:
        """Match all predictions of each image once; keep its per-class counts at
        ``score_thr`` and its ranked detections."""
        num_classes = len(self.classes)
        for sample in data_samples:
            pred, gt = sample['pred_instances'], sample['gt_instances']
            pred_bboxes, gt_bboxes = to_numpy(pred['bboxes']), to_numpy(gt['bboxes'])
            scores = to_numpy(pred['scores']).astype(np.float64).reshape(-1)
            pred_labels, gt_labels = to_numpy(pred['labels']), to_numpy(gt['labels'])
            match = match_image(pred_bboxes, scores, pred_labels, gt_bboxes, gt_labels,
                                score_thr=-np.inf, iou_thr=self.iou_thr, radius=self.radius)
            tp_all, _, fn_all = count_per_class(match, pred_labels, gt_labels, num_classes,
                                                image=sample.get('img_path'))
            kinds = error_kinds(match, pred_bboxes, pred_labels, gt_bboxes, gt_labels,
                                self.iou_thr, self.radius)
            ignored = sample.get('ignored_instances')
            ignored_bboxes = to_numpy(ignored['bboxes']) if ignored is not None and \
                'bboxes' in ignored else np.zeros((0, 4))
            counted = ~dont_care(match, pred_bboxes, ignored_bboxes, self.iou_thr,
                                 self.radius)
            order = np.argsort(-scores, kind='stable')
            order = order[counted[order]]
            ranked = dict(scores=scores[order],
                          labels=np.asarray(pred_labels, np.int64).reshape(-1)[order],
                          matched=match.pred_tp[order])
            tp, fp, fn = counts_at(*ranked.values(), tp_all + fn_all, self.score_thr,
                                   num_classes)
            img_id = sample.get('img_id')
            result = dict(img_id=img_id.item() if hasattr(img_id, 'item') else img_id,
                          img_path=sample.get('img_path'), tp=tp, fp=fp, fn=fn, **ranked,
                          kinds=kinds[order])
            if num_classes > 1:
                result[CLASSES_MERGED] = match_classes_merged(
                    pred_bboxes, scores, pred_labels, gt_bboxes, gt_labels,
                    ignored_bboxes, self.iou_thr, self.radius)
            self.results.append(result)

    def compute_metrics(self, results: list) -> dict:
        """Per-class and class-mean metrics from the per-image counts."""
        classes = self.classes
        counts = {k: np.array([r[k] for r in results], dtype=np.int64).reshape(
            len(results), len(classes)) for k in ('tp', 'fp', 'fn')}
        per_image = detection_rates(counts['tp'], counts['fp'], counts['fn'])
        pooled = detection_rates(*(counts[k].sum(0) for k in ('tp', 'fp', 'fn')))
        average = {rate: nanmean(per_image[rate], axis=0) for rate in RATES}

        metrics = {}
        for c, name in enumerate(classes):
            for rate in RATES:
                metrics[f'{name}/avg_{rate}'] = float(average[rate][c])
            for rate in RATES:
                metrics[f'{name}/pooled_{rate}'] = float(pooled[rate][c])
            for k in ('tp', 'fp', 'fn'):
                metrics[f'{name}/{k}'] = int(counts[k][:, c].sum())
            for kind, count in zip(ERROR_KINDS[1:], self._false_positive_kinds(results, c)):
                metrics[f'{name}/fp_{kind}'] = count
        num_gt = counts['tp'] + counts['fn']
        ranked = self._ranked(results)
        ap = self._average_precision(ranked, num_gt.sum(0))
        reached = self._max_recall(ranked, num_gt.sum(0))
        for c, name in enumerate(classes):
            metrics[f'{name}/ap'] = float(ap[c])
            metrics[f'{name}/max_recall'] = float(reached[c])
        for rate in RATES:
            metrics[f'avg_{rate}'] = float(nanmean(average[rate]))
            metrics[f'pooled_{rate}'] = float(nanmean(pooled[rate]))
        metrics['ap'] = float(nanmean(ap))
        metrics['max_recall'] = float(nanmean(reached))
        confusion = None
        if len(classes) > 1:
            confusion = confusion_matrix([r[CLASSES_MERGED] for r in results],
                                         self.score_thr, len(classes))
            metrics.update(self._classes_merged_metrics(results, num_gt.sum(1), confusion))

        print_log(self._summary(metrics, len(results), confusion), logger='current')
        selection = None
        if self.score_thr_candidates is not None:
            selection = self._select_score_thr(ranked, num_gt.sum(0), len(results))
            chosen = selection['chosen']
            metrics['pu_score_thr'] = float('nan') if chosen is None else chosen
            bound = ('point estimate' if self.score_thr_confidence is None else
                     f'{self.score_thr_confidence:g} lower bound')
            print_log(f'CellDetMetric: PU score threshold {chosen} (Lee & Liu criterion, '
                      f'labeled recall at its {bound}, over {self.score_thr_candidates})',
                      logger='current')
        if self.dump_per_image:
            per_image['ap'] = np.array(
                [self._average_precision(self._ranked([r]), n)
                 for r, n in zip(results, num_gt)],
                dtype=np.float64).reshape(len(results), len(classes))
            self._dump(results, counts, per_image, metrics, selection, confusion)
        return metrics

    def _classes_merged_metrics(self, results: list, num_cells, confusion) -> dict:
        """Rates and AP of the detections with the classes merged against every cell
        (``num_cells`` per image), and the class accuracy of the cells found."""
        merged = [r[CLASSES_MERGED] for r in results]
        counts = np.array([
            counts_at(m['scores'], np.zeros(len(m['scores']), np.int64),
                      m['true_labels'] >= 0, [n], self.score_thr, 1)
            for m, n in zip(merged, num_cells)], dtype=np.int64).reshape(len(results), 3)
        per_image = detection_rates(*counts.T)
        pooled = detection_rates(*counts.sum(0))
        metrics = {f'{CLASSES_MERGED}/avg_{rate}': float(nanmean(per_image[rate]))
                   for rate in RATES}
        metrics.update({f'{CLASSES_MERGED}/pooled_{rate}': float(pooled[rate])
                        for rate in RATES})
        scores, matched = (np.concatenate([np.zeros(0)] + [m[k] for m in merged])
                           for k in ('scores', 'true_labels'))
        metrics[f'{CLASSES_MERGED}/ap'] = float(
            average_precision(scores, matched >= 0, int(np.sum(num_cells))))
        found = confusion.sum()
        metrics['class_accuracy'] = float(np.trace(confusion) / found) if found else \
            float('nan')
        return metrics

    def _false_positive_kinds(self, results: list, label: int) -> list:
        """How many false positives of class ``label`` at ``score_thr`` are of each
        kind of :data:`~mmdet_pu.evaluation.matching.ERROR_KINDS` after ``'tp'``."""
        kinds = np.concatenate([np.zeros(0, np.int64)] + [
            r['kinds'][(r['labels'] == label) & (r['scores'] >= self.score_thr)]
            for r in results])
        counts = np.bincount(kinds, minlength=len(ERROR_KINDS))
        return [int(n) for n in counts[1:]]

    def _ranked(self, results: list):
        """The ranked detections of ``results`` (scores, labels, TP flags) joined."""
        return [np.concatenate([np.zeros(0)] + [r[k] for r in results]).astype(dtype)
                for k, dtype in zip(RANKED, (np.float64, np.int64, bool))]

    def _average_precision(self, ranked, num_gt) -> np.ndarray:
        """``(C,)`` AP of each class over the ``ranked`` detections (:meth:`_ranked`)."""
        scores, labels, matched = ranked
        return np.array([average_precision(scores[labels == c], matched[labels == c],
                                           num_gt[c]) for c in range(len(self.classes))])

    def _max_recall(self, ranked, num_gt) -> np.ndarray:
        """``(C,)`` the share of each class's cells that some of the ``ranked``
        detections of the class matches, at any score (NaN for a class without cells)."""
        _, labels, matched = ranked
        found = np.bincount(labels[matched], minlength=len(self.classes))
        return np.where(num_gt > 0, found / np.maximum(num_gt, 1), np.nan)

    def _select_score_thr(self, ranked, num_gt, num_images: int) -> dict:
        """Criterion per class and candidate over the ``ranked`` detections
        (:meth:`_ranked`) of ``num_images`` images, and the chosen threshold."""
        found = [counts_at(*ranked, num_gt, thr, len(self.classes))
                 for thr in self.score_thr_candidates]
        tp = np.stack([f[0] for f in found], axis=1)  # (classes, candidates)
        detections = np.stack([f[0] + f[1] for f in found], axis=1)
        point = pu_threshold_criterion(tp, detections, num_gt, num_images)
        criterion = point if self.score_thr_confidence is None else pu_threshold_criterion(
            tp, detections, num_gt, num_images, self.score_thr_confidence)
        return dict(candidates=self.score_thr_candidates,
                    confidence=self.score_thr_confidence,
                    criterion=[[None if np.isnan(v) else float(v) for v in row]
                               for row in criterion],
                    chosen=select_score_thr(self.score_thr_candidates, criterion),
                    chosen_point=select_score_thr(self.score_thr_candidates, point))

    def _criterion(self) -> str:
        return (f'centre distance <= {self.radius} px' if self.radius is not None
                else f'IoU >= {self.iou_thr}')

    def _summary(self, metrics: dict, num_images: int, confusion=None) -> str:
        """A per-class table for the log (with the classes merged and the confusion
        matrix of the cells found when there are several classes)."""
        header = ('class', 'TP', 'FP', 'FN', 'avg R', 'avg P', 'avg F1',
                  'pooled R', 'pooled P', 'pooled F1', 'AP', 'max R')
        rows = [header]
        for name in self.classes:
            rows.append((name, *(str(metrics[f'{name}/{k}']) for k in ('tp', 'fp', 'fn')),
                         *(f'{metrics[f"{name}/{kind}_{rate}"]:.4f}'
                           for kind in ('avg', 'pooled') for rate in RATES),
                         f'{metrics[f"{name}/ap"]:.4f}',
                         f'{metrics[f"{name}/max_recall"]:.4f}'))
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        lines = ['  '.join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows]
        lines += [f'{name} false positives: ' + ', '.join(
            f'{metrics[f"{name}/fp_{kind}"]} {kind}' for kind in ERROR_KINDS[1:])
            for name in self.classes]
        if confusion is not None:
            merged = {k: metrics[f'{CLASSES_MERGED}/{k}'] for k in ('avg_f1', 'ap')}
            lines += [f'classes merged: avg F1 {merged["avg_f1"]:.4f}, AP {merged["ap"]:.4f};'
                      f' class accuracy of the cells found {metrics["class_accuracy"]:.4f}'
                      ', confusion (rows: true class, columns: given class, '
                      f'{", ".join(self.classes)}): {confusion.tolist()}']
        return (f'CellDetMetric on {num_images} images (score >= {self.score_thr}, '
                f'{self._criterion()}; AP and max R, the recall AP stops at, over every '
                'detection; false positives by kind, docs/method.md#metrics):\n' + '\n'.join(lines))

    def _dump_dir(self) -> Optional[str]:
        if self.out_dir is not None:
            return self.out_dir
        log_file = MMLogger.get_current_instance().log_file
        if log_file is None:
            return None
        return osp.join(osp.dirname(osp.dirname(log_file)), DUMP_DIR)

    def _dump(self, results, counts, per_image, metrics, selection=None,
              confusion=None) -> None:
        """Write ``<stage>_per_image.json`` (everything) and ``.csv`` (one row per
        image and class)."""
        out_dir = self._dump_dir()
        if out_dir is None:
            print_log('CellDetMetric: no out_dir and no Runner work dir; per-image '
                      'values are not written', logger='current')
            return
        stage = MessageHub.get_current_instance().get_info('loop_stage', 'test')
        stage = stage if stage in ('val', 'test') else 'test'
        classes = list(self.classes)

        def clean(values):  # JSON has no NaN: undefined -> null
            return [None if np.isnan(v) else float(v) for v in values]

        images = []
        for i, result in enumerate(results):
            entry = dict(img_id=result['img_id'], img_path=result['img_path'])
            entry.update({k: counts[k][i].tolist() for k in ('tp', 'fp', 'fn')})
            entry.update({rate: clean(per_image[rate][i]) for rate in (*RATES, 'ap')})
            entry['detections'] = {k: result[k].tolist() for k in (*RANKED, 'kinds')}
            images.append(entry)
        head = f'{self.prefix}/' if self.prefix else ''
        report = dict(
            stage=stage, classes=classes, score_thr=self.score_thr,
            iou_thr=self.iou_thr, radius=self.radius, prefix=self.prefix,
            kinds=list(ERROR_KINDS),
            metrics={head + k: (None if isinstance(v, float) and np.isnan(v) else v)
                     for k, v in metrics.items()},
            score_thr_selection=selection,
            confusion=None if confusion is None else confusion.tolist(), images=images)
        json_file = osp.join(out_dir, f'{stage}_per_image.json')
        write_json_atomic(json_file, report, indent=1)

        csv_file = osp.join(out_dir, f'{stage}_per_image.csv')
        with atomic_open(csv_file, 'w', newline='') as f:
            writer = csv.writer(f)
            writer.writerow(['img_id', 'img_path', 'class', 'tp', 'fp', 'fn', *RATES])
            for entry in images:
                for c, name in enumerate(classes):
                    writer.writerow([entry['img_id'], entry['img_path'], name,
                                     *(entry[k][c] for k in ('tp', 'fp', 'fn')),
                                     *('' if entry[r][c] is None else entry[r][c]
                                       for r in RATES)])
        print_log(f'CellDetMetric: per-image values written to {json_file}',
                  logger='current')
