"""studies.comparison (and tools/compare.py) on per-image dumps written by
CellDetMetric itself."""
import json

import numpy as np
import pytest
import torch
from mmengine.evaluator import Evaluator
from mmengine.structures import InstanceData
from scipy import stats

from mmdet.structures import DetDataSample
from mmdet_pu.evaluation import CellDetMetric
from mmdet_pu.evaluation.rates import average_precision
from mmdet_pu.evaluation.statistics import benjamini_hochberg
from studies import comparison, comparison_format
from tests._cli import run_script


def sample_with_counts(img_id, counts):
    """An image whose matching gives ``counts[c] = (tp, fp, fn)`` for each class c."""
    pred_boxes, pred_labels, gt_boxes, gt_labels = [], [], [], []
    for c, (tp, fp, fn) in enumerate(counts):
        for k in range(tp + fn):
            gt_boxes.append([20 * k, 40 * c, 20 * k + 10, 40 * c + 10])
            gt_labels.append(c)
            if k < tp:
                pred_boxes.append(gt_boxes[-1])
                pred_labels.append(c)
        for k in range(fp):
            pred_boxes.append([20 * k, 1000 + 40 * c, 20 * k + 10, 1010 + 40 * c])
            pred_labels.append(c)
    s = DetDataSample(metainfo=dict(img_id=img_id, img_path=f'data/img{img_id}.png'))
    s.pred_instances = InstanceData(
        bboxes=torch.tensor(pred_boxes, dtype=torch.float32).reshape(-1, 4),
        scores=torch.full((len(pred_boxes),), 0.9), labels=torch.tensor(pred_labels))
    s.gt_instances = InstanceData(
        bboxes=torch.tensor(gt_boxes, dtype=torch.float32).reshape(-1, 4),
        labels=torch.tensor(gt_labels))
    return s


def dump(work_dir, images, classes=('cell',)):
    """Write ``work_dir/cell_metrics/test_per_image.json`` for ``{img_id: counts}``."""
    evaluate(work_dir, [sample_with_counts(i, counts) for i, counts in images.items()],
             classes)


def evaluate(work_dir, samples, classes=('cell',), **kwargs):
    """Evaluate ``samples`` with ``CellDetMetric(**kwargs)`` dumping into ``work_dir``."""
    evaluator = Evaluator(CellDetMetric(out_dir=str(work_dir / 'cell_metrics'), **kwargs))
    evaluator.dataset_meta = dict(classes=classes)
    evaluator.process(samples)
    return evaluator.evaluate(len(samples))


# fold k evaluates image k; (tp, fp, fn) per fold of one class
FOLDS = {
    'pu': [(6, 4, 4), (7, 3, 3), (13, 7, 7)],
    'base': [(5, 5, 5), (6, 5, 4), (11, 8, 10)],
    'upper': [(8, 1, 2), (9, 1, 1), (16, 2, 4)],
}


@pytest.fixture
def fold_dirs(tmp_path):
    for method, folds in FOLDS.items():
        for k, counts in enumerate(folds):
            dump(tmp_path / f'{method}_fold{k}', {k: [counts]})
    return tmp_path


def recall(tp, fp, fn):
    return tp / (tp + fn)


def precision(tp, fp, fn):
    return tp / (tp + fp)


def f1(tp, fp, fn):
    return 2 * tp / (2 * tp + fp + fn)


def test_fold_table_by_hand(fold_dirs):
    methods = [comparison.load_folds(name, str(fold_dirs / f'{name}_fold*'), 'test')
               for name in ('base', 'pu', 'upper')]
    table, num_tests = comparison.build_table(methods, 'pu', untested=['upper'])
    assert num_tests == 3  # base vs pu for R, P, F1; upper not tested
    raw = []
    for rate, fn in (('recall', recall), ('precision', precision), ('f1', f1)):
        base = [fn(*c) for c in FOLDS['base']]
        pu = [fn(*c) for c in FOLDS['pu']]
        cell = table[('base', 'cell', rate)]
        assert cell.mean == pytest.approx(np.mean(base))
        assert cell.std == pytest.approx(np.std(base, ddof=1))
        raw.append(stats.ttest_rel(base, pu).pvalue)
        assert table[('pu', 'cell', rate)].p is None
        assert table[('upper', 'cell', rate)].p is None
    adjusted = benjamini_hochberg(raw)
    for rate, q in zip(('recall', 'precision', 'f1'), adjusted):
        assert table[('base', 'cell', rate)].p == pytest.approx(q)


def compare_cli(*argv):
    return run_script('tools/compare.py', *argv)


def test_markdown_and_latex_output(fold_dirs):
    methods = [comparison.load_folds(name, str(fold_dirs / f'{folder}_fold*'), 'test')
               for name, folder in (('Baseline', 'base'), ('Proposed', 'pu'),
                                    ('Upper bound', 'upper'))]
    compared = comparison.compare(methods, 'Proposed', ['Upper bound'])
    text = comparison_format.format_comparison(compared)
    lines = text.splitlines()
    assert lines[0].startswith('| Method | Recall mean | std | p |')
    base_row = next(line for line in lines if line.startswith('| Baseline'))
    ref_row = next(line for line in lines if line.startswith('| Proposed'))
    # Proposed has the best means among tested methods (upper bound excluded): bold
    assert ref_row.count('**') >= 6 and ref_row.split(' | ')[3] == '-'
    pu_recall = np.mean([recall(*c) for c in FOLDS['pu']])
    assert f'**{pu_recall:.3f}**' in ref_row
    assert base_row.split(' | ')[3] in ('*', '**', 'n.s.')
    assert 'Benjamini-Hochberg corrected over the 3 tests' in text

    latex = comparison_format.format_comparison(compared, fmt='latex', show_p=True)
    assert latex.startswith('\\begin{tabular}{l ccc ccc ccc}')
    assert '\\multicolumn{3}{c}{Recall}' in latex and '\\textbf{' in latex
    rates_table = latex[:latex.index('\\end{tabular}') + len('\\end{tabular}')]
    assert rates_table.count('\\begin{tabular}') == 1
    # the ranking table follows, its note a LaTeX comment
    assert '\\multicolumn{3}{c}{F1 at 0.5}' in latex and '\\multicolumn{3}{c}{AP}' in latex
    assert latex.rstrip().splitlines()[-1].startswith('% Mean and std')

    # the command line prints the same
    argv = [fold_dirs / 'base_fold*', fold_dirs / 'pu_fold*', fold_dirs / 'upper_fold*',
            '--names', 'Baseline', 'Proposed', 'Upper bound', '--ref', 'Proposed',
            '--untested', 'Upper bound']
    proc = compare_cli(*argv)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == text + '\n'


def test_folds_must_evaluate_the_same_images(tmp_path):
    dump(tmp_path / 'a_fold0', {0: [(1, 0, 0)]})
    dump(tmp_path / 'a_fold1', {1: [(1, 0, 0)]})
    dump(tmp_path / 'b_fold0', {0: [(1, 0, 0)]})
    dump(tmp_path / 'b_fold1', {5: [(1, 0, 0)]})  # another test image
    methods = [comparison.load_folds(n, str(tmp_path / f'{n}_fold*'), 'test')
               for n in 'ab']
    with pytest.raises(ValueError, match='fold 1: .* evaluate different test images'):
        comparison.build_table(methods, 'a')


def test_per_image_mode_pairs_images_and_skips_undefined(tmp_path):
    classes = ('tumor', 'lymphocyte')
    # image 3 has no lymphocyte: its lymphocyte recall is undefined and left out
    dump(tmp_path / 'ref', {1: [(4, 1, 1), (2, 0, 2)], 2: [(3, 0, 2), (5, 1, 0)],
                            3: [(2, 2, 0), (0, 0, 0)], 4: [(6, 1, 1), (1, 1, 1)]}, classes)
    dump(tmp_path / 'other', {4: [(5, 2, 2), (1, 2, 1)], 3: [(1, 3, 1), (0, 1, 0)],
                              2: [(2, 1, 3), (4, 1, 1)], 1: [(3, 2, 2), (2, 1, 2)]}, classes)
    methods = [comparison.load_images('ref', str(tmp_path / 'ref'), 'test'),
               comparison.load_images('other', str(tmp_path / 'other'), 'test')]
    table, num_tests = comparison.build_table(methods, 'ref', per_image=True)
    assert num_tests == 6
    ref_lymph = [2 / 4, 5 / 5, 1 / 2]          # images 1, 2, 4
    other_lymph = [2 / 4, 4 / 5, 1 / 2]
    assert table[('ref', 'lymphocyte', 'recall')].mean == pytest.approx(np.mean(ref_lymph))
    assert table[('other', 'lymphocyte', 'recall')].mean == pytest.approx(
        np.mean(other_lymph))
    raw = {}
    for cls, c in (('tumor', 0), ('lymphocyte', 1)):
        for rate, fn in (('recall', recall), ('precision', precision), ('f1', f1)):
            ref_counts = {1: [(4, 1, 1), (2, 0, 2)], 2: [(3, 0, 2), (5, 1, 0)],
                          3: [(2, 2, 0), (0, 0, 0)], 4: [(6, 1, 1), (1, 1, 1)]}
            other_counts = {4: [(5, 2, 2), (1, 2, 1)], 3: [(1, 3, 1), (0, 1, 0)],
                            2: [(2, 1, 3), (4, 1, 1)], 1: [(3, 2, 2), (2, 1, 2)]}
            pairs = []
            for i in (1, 2, 3, 4):
                try:
                    pairs.append((fn(*other_counts[i][c]), fn(*ref_counts[i][c])))
                except ZeroDivisionError:
                    continue
            a, b = map(np.array, zip(*pairs))
            raw[(cls, rate)] = (stats.ttest_rel(a, b).pvalue if np.any(a != b)
                                else 1.0)
    adjusted = dict(zip(raw, benjamini_hochberg(list(raw.values()))))
    for key, q in adjusted.items():
        assert table[('other', *key)].p == pytest.approx(q)
    md = comparison_format.format_markdown(table, methods)
    assert md.splitlines()[0].startswith('| Class | Method |')
    assert any(line.startswith('| lymphocyte | other |') for line in md.splitlines())


def test_input_errors_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match='matches no work dir'):
        comparison.resolve_reports(str(tmp_path / 'nothing*'), 'test')
    (tmp_path / 'empty_run').mkdir()
    with pytest.raises(FileNotFoundError, match='test_per_image.json not found'):
        comparison.resolve_reports(str(tmp_path / 'empty_run'), 'test')
    proc = compare_cli('a', 'b', '--names', 'x', '--ref', 'x')
    assert proc.returncode == 2 and '2 METHOD arguments but 1 --names' in proc.stderr


def test_dumps_with_another_metric_prefix(tmp_path):
    for name in ('a', 'b'):
        evaluator = Evaluator(CellDetMetric(out_dir=str(tmp_path / name / 'cell_metrics'),
                                            prefix='det'))
        evaluator.dataset_meta = dict(classes=('cell',))
        evaluator.process([sample_with_counts(0, [(3, 1, 1)])])
        evaluator.evaluate(1)
    method = comparison.load_folds('a', str(tmp_path / 'a'), 'test')
    assert method.values[('cell', 'recall')].tolist() == [0.75]


def test_runs_of_a_multi_class_method_with_the_mean_over_classes(tmp_path):
    classes = ('tumor', 'lymphocyte')
    reports = []
    for seed, counts in enumerate([[(4, 1, 1), (2, 0, 2)], [(3, 0, 2), (5, 1, 0)]]):
        dump(tmp_path / f'seed{seed}', {1: counts}, classes)
        reports.append(comparison.report_path(str(tmp_path / f'seed{seed}')))
    method = comparison.load_runs('mpu', reports, overall=True)
    assert method.classes == ['tumor', 'lymphocyte', comparison.OVERALL]
    f1_mean = [np.mean([f1(4, 1, 1), f1(2, 0, 2)]), np.mean([f1(3, 0, 2), f1(5, 1, 0)])]
    assert method.values[(comparison.OVERALL, 'f1')] == pytest.approx(f1_mean)
    table, num_tests = comparison.build_table([method], 'mpu')
    data = comparison_format.table_dict(table, [method])
    entry = data['mpu'][comparison.OVERALL]['f1']
    assert entry['mean'] == pytest.approx(np.mean(f1_mean))
    assert entry['std'] == pytest.approx(np.std(f1_mean, ddof=1))
    assert entry['p'] is None and num_tests == 0
    assert comparison.load_runs('mpu', reports).classes == list(classes)  # opt-in


def ranked_sample(img_id, gt_count, detections):
    """One class: ``gt_count`` cells and ``detections`` as ``(score, is_tp)`` pairs (the
    k-th TP on the k-th cell, FPs far from any cell)."""
    gt_boxes = [[20 * k, 0, 20 * k + 10, 10] for k in range(gt_count)]
    pred_boxes, tps = [], 0
    for k, (_, is_tp) in enumerate(detections):
        pred_boxes.append(gt_boxes[tps] if is_tp else [20 * k, 500, 20 * k + 10, 510])
        tps += is_tp
    s = DetDataSample(metainfo=dict(img_id=img_id, img_path=f'data/img{img_id}.png'))
    s.pred_instances = InstanceData(
        bboxes=torch.tensor(pred_boxes, dtype=torch.float32).reshape(-1, 4),
        scores=torch.tensor([score for score, _ in detections], dtype=torch.float32),
        labels=torch.zeros(len(detections), dtype=torch.long))
    s.gt_instances = InstanceData(
        bboxes=torch.tensor(gt_boxes, dtype=torch.float32).reshape(-1, 4),
        labels=torch.zeros(gt_count, dtype=torch.long))
    return s


def write_val_dump(run_dir, score_thr):
    """The part of a validation dump the comparison reads: the selected threshold."""
    path = run_dir / 'cell_metrics' / 'val_per_image.json'
    path.write_text(json.dumps(dict(metrics={'cell/pu_score_thr': score_thr})))


def f1_at(detections, gt_count, thr):
    tp = sum(is_tp for score, is_tp in detections if score >= thr)
    fp = sum(not is_tp for score, is_tp in detections if score >= thr)
    return f1(tp, fp, gt_count - tp)


# per method and seed: (detections of image 0, of image 1), 3 cells per image; the
# thresholds 0.5 (test) and 0.7 (validation) keep different detections
RUNS = {
    'pu': [([(0.9, 1), (0.8, 0), (0.6, 1), (0.2, 0)], [(0.95, 1), (0.75, 1), (0.3, 0)]),
           ([(0.9, 1), (0.85, 1), (0.6, 0)], [(0.72, 1), (0.65, 0), (0.55, 1)]),
           ([(0.8, 1), (0.72, 1), (0.71, 1)], [(0.9, 0), (0.6, 1)])],
    'ce': [([(0.6, 1), (0.55, 0)], [(0.9, 1), (0.4, 1)]),
           ([(0.52, 1)], [(0.8, 0), (0.75, 1), (0.51, 1)]),
           ([(0.9, 1), (0.5, 0), (0.45, 1)], [(0.3, 1)])],
}


def test_ranking_table_f1_at_the_validation_threshold_and_ap(tmp_path):
    reports = {}
    for name, seeds in RUNS.items():
        reports[name] = []
        for seed, images in enumerate(seeds):
            run_dir = tmp_path / name / f'seed{seed}'
            metrics = evaluate(run_dir, [ranked_sample(i, 3, d) for i, d in enumerate(images)])
            if (name, seed) != ('ce', 2):  # one run without a validation threshold
                write_val_dump(run_dir, 0.7)
            # AP over both images: the ranked detections of the set
            ranked = sorted(((s, t) for d in images for s, t in d), key=lambda x: -x[0])
            assert metrics['cell/cell/ap'] == pytest.approx(average_precision(
                [s for s, _ in ranked], [t for _, t in ranked], 6))
            reports[name].append(comparison.report_path(str(run_dir)))
    methods = [comparison.load_runs(name, paths) for name, paths in reports.items()]
    assert methods[0].val_score_thrs == [0.7] * 3 and methods[1].val_score_thrs[2] is None
    pu, ce = methods
    expected = {name: [np.mean([f1_at(d, 3, 0.7) for d in images]) for images in seeds]
                for name, seeds in RUNS.items()}
    expected['ce'][2] = np.nan
    assert pu.values[('cell', 'f1_val')] == pytest.approx(expected['pu'])
    assert ce.values[('cell', 'f1_val')] == pytest.approx(expected['ce'], nan_ok=True)
    # F1 at the test threshold is the metric's F1, at 0.5
    assert pu.values[('cell', 'f1')] == pytest.approx(
        [np.mean([f1_at(d, 3, 0.5) for d in images]) for images in RUNS['pu']])

    compared = comparison.compare(methods, 'pu')
    assert compared.ranking_tests == 3
    raw = []
    for measure in comparison.RANKING:
        a, b = ce.values[('cell', measure)], pu.values[('cell', measure)]
        keep = ~np.isnan(a)
        raw.append(stats.ttest_rel(a[keep], b[keep]).pvalue)
    for measure, q in zip(comparison.RANKING, benjamini_hochberg(raw)):
        assert compared.ranking[('ce', 'cell', measure)].p == pytest.approx(q)
    assert compared.ranking[('ce', 'cell', 'f1_val')].mean == pytest.approx(
        np.mean(expected['ce'][:2]))
    text = comparison_format.format_comparison(compared)
    assert '| Method | F1 at 0.5 mean | std | p | F1 at val. thr. mean | std | p | AP mean' \
        in text
    assert '1 of 6 runs have no validation threshold' in text
    data = comparison_format.ranking_dict(compared.ranking, compared.ranking_tests, methods)
    assert data['val_score_thrs'] == {'pu': [0.7] * 3, 'ce': [0.7, 0.7, None]}
    assert data['table']['ce']['cell']['f1_val']['values'][2] is None

    # per image: F1 at the validation threshold and AP of each image
    per_image = comparison.load_images('pu', str(tmp_path / 'pu' / 'seed0'), 'test')
    images = RUNS['pu'][0]
    assert per_image.values[('cell', 'f1_val')] == pytest.approx(
        [f1_at(d, 3, 0.7) for d in images])
    assert per_image.values[('cell', 'ap')] == pytest.approx(
        [average_precision([s for s, _ in d], [t for _, t in d], 3) for d in images])


def test_dumps_without_ranked_detections_have_no_ranking_values(tmp_path):
    """A dump written before the metric kept its ranked detections and AP."""
    dump(tmp_path / 'old', {0: [(3, 1, 1)]})
    path = tmp_path / 'old' / 'cell_metrics' / 'test_per_image.json'
    report = json.loads(path.read_text())
    for image in report['images']:
        del image['detections'], image['ap']
    del report['metrics']['cell/cell/ap'], report['metrics']['cell/ap']
    path.write_text(json.dumps(report))
    write_val_dump(tmp_path / 'old', 0.5)
    method = comparison.load_runs('old', [str(path)])
    assert np.isnan(method.values[('cell', 'f1_val')]).all()
    assert np.isnan(method.values[('cell', 'ap')]).all()
    assert method.values[('cell', 'f1')].tolist() == [0.75]
