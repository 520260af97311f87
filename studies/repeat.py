"""Repeated runs: configs trained and tested over seeds (and folds), then compared.

plan -> run -> compare -> write:

* :func:`plan_runs`: per method one :class:`~mmdet_pu.workflow.runs.Run` per seed
  (``randomness.seed``, the seed of training, not of the annotation deletion, which keeps
  the config's own) and, with folds, per fold (every ``annotations/fold<k>/`` path set to
  the fold's, :func:`~mmdet_pu.workflow.runs.fold_options`), each in
  ``<work dir>/<config stem>/seed<K>[_fold<F>]``;
* :func:`run_plan`: :func:`~mmdet_pu.workflow.runs.run_all`, seed-major (an interrupted
  experiment has every method of the first seeds);
* :func:`compare_runs`: the tables of :func:`.comparison.compare` over the runs' test
  dumps, paired by seed (and fold);
* :func:`write_results`: ``results.md``, ``results.json`` and ``results.png`` through
  :mod:`mmdet_pu.workflow.reports`.

The demo (:mod:`.demo`) is a preset of it.
"""
from typing import Callable, Dict, List, Optional, Sequence

from mmdet_pu.workflow.reports import pyplot, write_results as write_report
from mmdet_pu.workflow.runs import (Commands, Run, composed_config, fold_options, run_all,
                                    run_dir)
from .comparison import OVERALL, Comparison, compare, load_runs
from .comparison_format import draw_rates, format_comparison, ranking_dict, table_dict


def plan_runs(names: Sequence[str], configs: Sequence[str], seeds: Sequence[int],
              work_dir: str, folds: Optional[Sequence[int]] = None,
              cfg_options: Sequence[str] = (), show_dir: Optional[str] = None,
              commands: Commands = Commands()) -> Dict[str, List[Run]]:
    """``{method name: [Run per seed (x fold)]}`` in pairing order (seed, then fold).

    Args:
        names: the methods' names, one per config.
        configs: the config files.
        seeds: training seeds.
        work_dir: the experiment's folder.
        folds: folds (``annotations/fold<k>/``), None for the configs' own data.
        cfg_options: ``--cfg-options`` of every training and test.
        show_dir: overlays (``tools/test.py --show-dir``) of the first seed's runs.
        commands: the modules that train and test
            (:class:`~mmdet_pu.workflow.runs.Commands`).

    Raises:
        ValueError: a config cannot be folded, or ``cfg_options`` set what the folds set.
    """
    plan = {}
    for name, config in zip(names, configs):
        per_fold = {None: []}
        if folds:
            cfg = composed_config(config, cfg_options)
            per_fold = {fold: fold_options(cfg, fold, config) for fold in folds}
            clash = {o.split('=')[0] for opts in per_fold.values() for o in opts} & {
                o.split('=')[0] for o in cfg_options}
            if clash:
                raise ValueError(f'--cfg-options {sorted(clash)}: set by --folds')
        plan[name] = [
            Run(config, run_dir(work_dir, config, seed, fold),
                [*cfg_options, *options, f'randomness.seed={seed}'],
                name=f'{name} seed {seed}' + ('' if fold is None else f' fold {fold}'),
                show_dir=show_dir if seed == seeds[0] else None, commands=commands)
            for seed in seeds for fold, options in per_fold.items()]
    return plan


def seed_major(plan: Dict[str, List[Run]]) -> List[Run]:
    """The runs of every method for the first seed (and fold), then the next, ..."""
    return [runs[k] for k in range(len(next(iter(plan.values())))) for runs in plan.values()]


def dry_run(plan: Dict[str, List[Run]]) -> List[str]:
    """The shell line of every run not finished yet (checked against its work dir)."""
    lines = []
    for run in seed_major(plan):
        run.check_record()
        line = run.shell_commands()
        if line:
            lines.append(line)
    return lines


def run_plan(plan: Dict[str, List[Run]], jobs: int = 1,
             echo: Callable[[str], None] = print, status_every: float = 60) -> None:
    """Train and test what the plan still needs (:func:`~mmdet_pu.workflow.runs.run_all`)."""
    run_all(seed_major(plan), jobs, echo=echo, status_every=status_every)


def compare_runs(plan: Dict[str, List[Run]], ref: str, untested=()) -> Comparison:
    """Both comparison tables over the runs of each method (the average over test
    images per run, and the mean over classes for several classes)."""
    methods = [load_runs(name, [run.report for run in runs], overall=True)
               for name, runs in plan.items()]
    return compare(methods, ref, untested)


def draw_results(comparison: Comparison, title: str):
    """One panel per class (and the mean over classes): mean ± std bars, run dots."""
    plt = pyplot()
    methods = comparison.methods
    classes = methods[0].classes
    fig, axes = plt.subplots(len(classes), 1, squeeze=False,
                             figsize=(max(6, 1.8 * len(methods) + 2), 3.6 * len(classes)))
    for ax, cls in zip(axes[:, 0], classes):
        draw_rates(ax, comparison.rates, methods, cls,
                   title=f'{title}: {cls}' if len(classes) > 1 else title)
    fig.tight_layout()
    return fig


def write_results(work_dir: str, plan: Dict[str, List[Run]], comparison: Comparison,
                  configs: Sequence[str], seeds: Sequence[int],
                  folds: Optional[Sequence[int]] = None,
                  cfg_options: Sequence[str] = ()) -> str:
    """``results.md``, ``results.json`` and ``results.png`` in ``work_dir``; returns the
    Markdown text."""
    c = comparison
    runs = len(seeds) * len(folds or [None])
    what = f'seeds {list(seeds)}' + (f' x folds {list(folds)}' if folds else '')
    text = (f'{runs} runs per method ({what}); test split, average over test images.\n\n'
            f'{format_comparison(c, show_p=True)}\n')
    classes = c.methods[0].classes
    results = dict(
        configs=dict(zip(plan, configs)), seeds=list(seeds),
        folds=None if folds is None else list(folds), ref=c.ref, untested=c.untested,
        cfg_options=list(cfg_options), stat='avg', classes=classes,
        overall_class=OVERALL if OVERALL in classes else None, num_tests=c.rate_tests,
        runs={name: [run.work_dir for run in method_runs]
              for name, method_runs in plan.items()},
        table=table_dict(c.rates, c.methods),
        ranking=ranking_dict(c.ranking, c.ranking_tests, c.methods))
    write_report(work_dir, text, results,
                 draw=lambda: draw_results(c, f'{runs} runs per method'))
    return text
