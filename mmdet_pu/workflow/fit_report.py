"""What the prior fit (:mod:`.prior_fit`) leaves in its work dir and prints: the
checkpoint of its choice and its config (``fit_prior.pth``, ``fit_prior_config.py``),
``fit_prior.json`` (written and read here), ``fit_prior.png`` and the terminal table."""
import json
import os
import os.path as osp
import shutil
from typing import List

from cellio.atomic import write_atomic
from .fused_ensemble import dumped_config, standalone_config
from .reports import pyplot
from .runs import Run

#: The fit's summary in its work dir (:func:`read_fit_summary`).
FIT_SUMMARY = 'fit_prior.json'
#: The config of the detector the fit returns, beside ``fit_prior.pth``
#: (:func:`write_returned_config`).
RETURNED_CONFIG = 'fit_prior_config.py'
#: The detectors a fit may return that are none of its trainings, reported under their
#: own keys of the summary, and what their ``chosen_config`` is.
MADE_DETECTORS = dict(
    fused='the trainings fused; tools/test.py tests it with that checkpoint',
    distilled='the distilled detector as it trained, its validation dump recorded; '
              'tools/test.py tests it with that checkpoint',
    guarded='the fit\'s detector and the reference with votes per class; tools/test.py '
            'tests it with that checkpoint')


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


def write_returned_config(chosen: dict, run: Run, work_dir: str) -> str:
    """Write ``<work_dir>/fit_prior_config.py``, the config that goes with
    ``fit_prior.pth`` whatever the fit chose, and return its path: the config of the
    chosen row (``chosen``, its run ``run``): its own (the fused or the distilled
    detector's) or the one its training ran with (options merged), without its
    ``work_dir`` (a test of it writes into ``./work_dirs/fit_prior_config``, not over the
    fit's dumps) and with its validation dump recorded relative to ``work_dir``
    (``validation_dump``), so that ``tools/test.py fit_prior_config.py fit_prior.pth
    --score-thr val`` and ``tools/infer_slide.py`` read the chosen detector's threshold."""
    cfg = standalone_config(chosen.get('config') or dumped_config(run),
                            osp.relpath(run.work_dir, work_dir))
    path = osp.join(work_dir, RETURNED_CONFIG)
    write_atomic(path, cfg.pretty_text)
    return path


def reported(row: dict) -> dict:
    """What ``fit_prior.json`` keeps of a row of the fit."""
    return {k: v for k, v in row.items() if k not in ('counts', 'prior')}


def read_fit_summary(work_dir: str) -> dict:
    """The summary of the fit in ``work_dir`` (its ``fit_prior.json``).

    Raises:
        OSError: there is none.
        ValueError: it is not JSON (the message names the file).
    """
    path = osp.join(work_dir, FIT_SUMMARY)
    with open(path) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f'{path}: not valid JSON ({e}); expected the summary of a '
                             'prior fit') from e


def returned_training(summary: dict) -> dict:
    """The training (as ``fit_prior.json`` reports it) that the fit of ``summary``
    returns: its fused or distilled detector, or the chosen training."""
    if summary['chosen'] in MADE_DETECTORS:
        return summary[summary['chosen']]
    return next(t for t in summary['trainings'] if t['name'] == summary['chosen'])


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


def _number(value) -> str:
    return '-' if value is None else f'{value:.3f}'


def _line(name: str, setting: str, recall: str, thr: str, criterion: str, f1: str,
          ap: str) -> str:
    return f'{name:13s} {setting:39s} {recall:8s}{thr:9s}{criterion:11s}{f1:9s}{ap}'


def _detector_line(name: str, setting: str, row: dict, criterion: str) -> str:
    """A row of :func:`format_summary`: a detector's ``setting`` (its priors or votes),
    validation recall and threshold, ``criterion`` and test F1 and AP."""
    return _line(name, setting, f'{row["val_recall"]:.3f}',
                 _number(row.get('val_score_thr')), criterion,
                 _number(row['test']['avg_f1']), _number(row['test']['ap']))


def _priors(row: dict) -> str:
    return ', '.join(f'{stage} {value}' for stage, value in row['priors'].items()
                     if value is not None)


def format_summary(summary: dict) -> str:
    """A table of the trainings, the fused and the distilled detectors when the fit
    made them, and the choice, for the terminal."""
    lines = [_line('training', 'priors', 'val R', 'val thr', 'criterion', 'test F1',
                   'test AP')]
    for row in summary['trainings']:
        lines.append(_detector_line(row['name'], _priors(row), row,
                                    f'{row["pu_criterion"]:.3f}'))
    fused, distilled = summary.get('fused'), summary.get('distilled')
    if fused:
        votes = 'votes ' + ', '.join(f'{w:.2f}' for w in fused['weights'])
        lines.append(_detector_line('fused', votes, fused, '-'))
    if distilled:
        lines.append(_detector_line('distilled', 'own loss', distilled, '-'))
    guard = summary.get('guard')
    if guard:
        lines.append(_detector_line('reference', 'own loss', guard['reference'], '-'))
        taken = [name for name, c in guard['classes'].items() if c['from_reference']]
        if summary.get('guarded'):
            lines.append(_detector_line('guarded', 'from the reference: ' + ', '.join(taken),
                                        summary['guarded'], '-'))
    lines.append(f'chosen: {summary["chosen"]} ({summary["reason"]}); checkpoint '
                 f'{summary["checkpoint"]}')
    if summary['chosen_config'] != summary['config']:
        what = MADE_DETECTORS.get(summary['chosen'], 'the own-loss self-training')
        lines.append(f'its config: {summary["chosen_config"]} ({what})')
    if summary['chosen_cfg_options']:
        lines.append('its options: --cfg-options ' + ' '.join(summary['chosen_cfg_options']))
    if summary.get('returned_config'):
        lines.append(f'test it: python tools/test.py {summary["returned_config"]} '
                     f'{summary["checkpoint"]}')
    return '\n'.join(lines)
