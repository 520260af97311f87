"""Grid search of the class prior pi on the validation set (paper Section 2.3,
docs/method.md#prior-selection).

Every candidate value trains the config once, in ``<work dir>/prior_<value>``, with the
value at every prior key (:func:`mmdet_pu.prior.keys.find_prior_keys` unless given): a
:class:`~mmdet_pu.workflow.runs.Run` without a test, scheduled by
:func:`~mmdet_pu.workflow.runs.run_all`. Training ends with a validation pass whose
``CellDetMetric`` dump, ``cell_metrics/val_per_image.json``, is the value's result; a
value that has one is not trained again (unless ``force``), whatever options it was
trained with, and reports the options it was trained with (read from the config that
mmengine dumped in its folder).

The chosen value (:mod:`mmdet_pu.prior.selection`) has the best validation average
recall, the paper's criterion (ties to the smaller prior: a bolder detector trades
precision, which incomplete validation labels cannot measure, for recall), or, with
``select='pu'``, the best Lee & Liu criterion r^2 / Pr[f(x) = 1] of the same validation
pass (:mod:`mmdet_pu.evaluation.score_threshold`), which also sees the false positives of
a bolder detector. The recall band is the set of values whose validation recall is
within ``band`` of the best.

Around an estimate (:mod:`mmdet_pu.prior.estimate_file`) the grid is
:func:`narrow_grid`; the estimate's other options (the RPN prior estimated for its own
stage) come before the user's options in every run, and the estimate's key must be among
the swept keys.

Outputs in the work dir: ``sweep.csv`` (one row per value), ``sweep.png`` (validation
recall, precision and F1 against the prior) and ``chosen.json`` (the chosen value, its
keys, metrics, run dir and checkpoint, the options it was trained with, the recall band
and, around an estimate, whether the estimate lies in the band).
"""
import math
import os.path as osp
import shlex
import sys
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
from mmengine.config import Config

from mmdet_pu.engine.launch import parse_cfg_options
from mmdet_pu.prior.estimate_file import Estimate, read_estimate
from mmdet_pu.prior.keys import find_prior_keys, get_key
from mmdet_pu.prior.selection import (COLUMNS, SELECTION_METRIC, check_sweep_config, choose,
                                      choose_by_pu_criterion, read_val_metrics, recall_band)
from mmdet_pu.workflow.reports import pyplot, save_figure, write_csv, write_json
from mmdet_pu.workflow.runs import Run, run_all

SELECTIONS = {'recall': f'cell/{SELECTION_METRIC} on the validation set',
              'pu': "Lee & Liu's r^2 / Pr[f(x) = 1] on the validation set"}


def candidate_values(values=None, value_range=None) -> List[float]:
    """The grid: explicit ``values``, or ``(start, stop, step)`` with ``stop`` included."""
    if values is not None:
        grid = [float(v) for v in values]
    else:
        start, stop, step = value_range
        if step <= 0 or stop < start:
            raise ValueError(f'--range {start} {stop} {step}: expected STEP > 0 and '
                             'STOP >= START')
        count = int(math.floor((stop - start) / step + 1e-9)) + 1
        grid = [round(start + i * step, 10) for i in range(count)]
    if len(set(grid)) != len(grid):
        raise ValueError(f'candidate priors repeat: {grid}')
    for value in grid:
        if not 0 < value < 1:
            raise ValueError(f'candidate prior {value}: expected 0 < prior < 1')
    return grid


def narrow_grid(center: float, width: float = 0.2, num: int = 3) -> List[float]:
    """``num`` priors ``center * (1 + k width)``, ``k = -(num-1)/2, ..., (num-1)/2``,
    rounded to three significant digits; values outside (0, 1) are left out (with a
    message on stderr). The relative spacing fits priors of every scale."""
    if not 0 < center < 1:
        raise ValueError(f'estimated prior {center}: expected 0 < prior < 1')
    if width <= 0 or num < 1:
        raise ValueError(f'--width {width} --num {num}: expected W > 0 and N >= 1')
    values = [float(f'{center * (1 + (k - (num - 1) / 2) * width):.3g}')
              for k in range(num)]
    kept = [value for value in values if 0 < value < 1]
    if len(kept) < len(values):
        print(f'[sweep] left out priors outside (0, 1): '
              f'{sorted(set(values) - set(kept))}', file=sys.stderr)
    return kept


def estimate_grid(estimate: Estimate, width: float = 0.2, num: int = 3,
                  values: Sequence[float] = ()) -> List[float]:
    """:func:`narrow_grid` around the estimate's prior, with ``values`` added."""
    return candidate_values(sorted(set(narrow_grid(estimate.prior, width, num)
                                       + list(values))))


def sweep_keys(config: str, cfg_options: Sequence[str] = (),
               keys: Optional[Sequence[str]] = None) -> Tuple[Config, List[str]]:
    """The composed config (with ``cfg_options``) and the keys a sweep sets: ``keys``, or
    :func:`~mmdet_pu.prior.keys.find_prior_keys`; checked by
    :func:`~mmdet_pu.prior.selection.check_sweep_config`."""
    cfg = Config.fromfile(config)
    cfg.merge_from_dict(parse_cfg_options(cfg_options))
    keys = list(keys or find_prior_keys(cfg))
    check_sweep_config(cfg, config, keys)
    return cfg, keys


class SweepSetup(NamedTuple):
    """What a sweep runs: the ``grid``, the ``keys`` set to each value, the
    ``cfg_options`` of every run and, around an estimate, ``(Estimate, file)``."""
    grid: List[float]
    keys: List[str]
    cfg_options: List[str]
    estimate: Optional[Tuple[Estimate, str]] = None


def setup_sweep(config: str, values: Optional[Sequence[float]] = None, value_range=None,
                estimate_file: Optional[str] = None, width: float = 0.2, num: int = 3,
                keys: Optional[Sequence[str]] = None, cfg_options: Sequence[str] = (),
                echo: Callable[[str], None] = print) -> SweepSetup:
    """The grid (``values``, ``value_range`` or around the estimate in
    ``estimate_file``, with ``values`` added), the keys (checked) and the options.

    Raises:
        ValueError: a bad grid or estimate file, a config a sweep cannot use, or an
            estimate for a key the sweep does not set.
    """
    estimate = None
    if estimate_file:
        estimate = (read_estimate(estimate_file), estimate_file)
        grid = estimate_grid(estimate[0], width, num, values or [])
        cfg_options = [*estimate[0].sweep_options(), *cfg_options]
        echo(f'around the estimate {estimate[0].prior:g} of {estimate_file}: {grid}')
    else:
        grid = candidate_values(values, value_range)
    _, keys = sweep_keys(config, cfg_options, keys)
    if estimate and estimate[0].key not in keys:
        raise ValueError(f'{estimate_file}: the estimate is for {estimate[0].key}, but '
                         f'the sweep sets {keys}')
    return SweepSetup(grid, keys, list(cfg_options), estimate)


def value_options(keys: Sequence[str], value: float) -> List[str]:
    """The ``--cfg-options`` that set every key to ``value``."""
    return [f'{key}={value!r}' for key in keys]


def value_dir(work_dir: str, value: float) -> str:
    return osp.join(work_dir, f'prior_{value:g}')


def plan_sweep(config: str, grid: Sequence[float], keys: Sequence[str], work_dir: str,
               cfg_options: Sequence[str] = ()) -> Dict[float, Run]:
    """``{value: Run}``, training only, ``cfg_options`` before the value's options."""
    return {value: Run(config, value_dir(work_dir, value),
                       [*cfg_options, *value_options(keys, value)],
                       name=f'prior {value:g}', test=False)
            for value in grid}


def pending(plan: Dict[float, Run], force: bool = False) -> List[Run]:
    """The runs to train: those without validation results (all with ``force``)."""
    return [run for run in plan.values()
            if force or read_val_metrics(run.work_dir) is None]


def dry_run(plan: Dict[float, Run], force: bool = False) -> List[str]:
    """The training command of every value :func:`pending` trains."""
    return [shlex.join(run.train_command()) for run in pending(plan, force)]


def trained_options(run_dir: str, config: str, options: Sequence[str]) -> List[str]:
    """``options`` (``key=value``) with the values the run in ``run_dir`` was trained
    with, read from the config that mmengine dumped there; ``options`` unchanged when
    there is no dump (a run trained elsewhere)."""
    dump = osp.join(run_dir, osp.basename(config))
    if not options or not osp.exists(dump):
        return list(options)
    cfg = Config.fromfile(dump)
    return [f'{key}={get_key(cfg, key)!r}'
            for key in (option.split('=', 1)[0] for option in options)]


def _checkpoint(run: Run) -> Optional[str]:
    try:
        return run.last_checkpoint()
    except OSError:
        return None


def draw_sweep(rows: List[dict], chosen: dict, keys: Sequence[str]):
    """Validation recall, precision and F1 against the prior, the chosen value marked."""
    plt = pyplot()
    priors = np.array([row['prior'] for row in rows])
    fig, ax = plt.subplots(figsize=(6, 4))
    for metric, label in (('avg_recall', 'average recall (selection)'),
                          ('avg_precision', 'average precision'),
                          ('avg_f1', 'average F1')):
        ax.plot(priors, [row[metric] for row in rows], marker='o', label=label)
    ax.axvline(chosen['prior'], color='grey', linestyle='--',
               label=f'chosen prior {chosen["prior"]:g}')
    ax.set_xlabel('prior ' + ', '.join(keys))
    ax.set_ylabel('validation value')
    ax.set_title('Prior sweep (validation labels may be incomplete)')
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def run_sweep(config: str, grid: Sequence[float], keys: Sequence[str], work_dir: str,
              cfg_options: Sequence[str] = (), select: str = 'recall',
              band: float = 0.02, force: bool = False, jobs: int = 1,
              estimate: Optional[Tuple[Estimate, str]] = None,
              echo: Callable[[str], None] = print) -> Tuple[List[dict], dict]:
    """Train what the grid still needs, choose and write the outputs.

    Args:
        config: the experiment config.
        grid: the candidate priors.
        keys: the config keys set to each value.
        work_dir: the sweep's folder.
        cfg_options: options of every run (around an estimate: its options first).
        select: ``'recall'`` or ``'pu'`` (:data:`SELECTIONS`).
        band: the recall band's tolerance.
        force: train values that have validation results again.
        jobs: runs side by side.
        estimate: the estimate and its file, when the grid is around one.
        echo: progress messages.

    Returns:
        ``(rows, summary)``: one row per value (``prior``, ``run_dir``,
        :func:`~mmdet_pu.prior.selection.read_val_metrics`) and the content of
        ``chosen.json``.
    """
    plan = plan_sweep(config, grid, keys, work_dir, cfg_options)
    todo = pending(plan, force)
    for run in todo if force else ():
        run.forget()
    for value, run in plan.items():
        if run not in todo:
            echo(f'prior {value:g}: reusing the results in {run.work_dir}')
    run_all(todo, jobs, echo=echo)
    rows = []
    for value, run in plan.items():
        metrics = read_val_metrics(run.work_dir)
        if metrics is None:
            raise RuntimeError(f'prior {value:g}: training finished but wrote no '
                               f'{run.work_dir}/cell_metrics/val_per_image.json')
        rows.append(dict(prior=value, run_dir=run.work_dir, **metrics))

    chosen = choose(rows) if select == 'recall' else choose_by_pu_criterion(rows)
    band_info = recall_band(rows, band)
    fixed = estimate[0].sweep_options() if estimate else []
    summary = dict(
        prior=chosen['prior'], keys=list(keys), selected_by=SELECTIONS[select],
        metrics={k: (None if math.isnan(chosen[k]) else chosen[k]) for k in COLUMNS},
        run_dir=chosen['run_dir'], checkpoint=_checkpoint(plan[chosen['prior']]),
        cfg_options=trained_options(chosen['run_dir'], config, fixed)
        + value_options(keys, chosen['prior']),
        band=band_info)
    if select == 'pu':
        summary['pu_criterion'] = {f'{row["prior"]:g}': row['pu_criterion'] for row in rows}
    if estimate:
        center = estimate[0].prior
        summary['estimate'] = dict(prior=center, file=estimate[1], in_band=(
            band_info['low'] is not None and band_info['low'] <= center <= band_info['high']))
    fields = ['prior', *COLUMNS] + (['pu_criterion'] if select == 'pu' else [])
    write_csv(osp.join(work_dir, 'sweep.csv'), [*fields, 'run_dir'], rows)
    save_figure(draw_sweep(rows, chosen, keys), osp.join(work_dir, 'sweep.png'), dpi=120)
    write_json(osp.join(work_dir, 'chosen.json'), summary)
    return rows, summary


def format_summary(rows: List[dict], summary: dict, select: str) -> List[str]:
    """The lines the tool prints: every value's metrics, the choice, the band and where
    the estimate lies."""
    columns = COLUMNS + (('pu_criterion',) if select == 'pu' else ())
    lines = [f'prior {row["prior"]:g}: ' + ', '.join(f'{k}={row[k]:.4f}' for k in columns)
             for row in rows]
    chosen = next(row for row in rows if row['prior'] == summary['prior'])
    lines.append(f'chosen prior {summary["prior"]:g} by {SELECTIONS[select]} '
                 f'({SELECTION_METRIC} {chosen[SELECTION_METRIC]:.4f})')
    band = summary['band']
    if band['values']:
        lines.append(f'recall band (within {band["tolerance"]:g} of the best): '
                     f'{band["low"]:g} to {band["high"]:g} {band["values"]}')
    if 'estimate' in summary:
        where = 'inside' if summary['estimate']['in_band'] else 'outside'
        lines.append(f'the estimate {summary["estimate"]["prior"]:g} lies {where} the '
                     'recall band')
    return lines
