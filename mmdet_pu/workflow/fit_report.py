"""What the prior fit (:mod:`.prior_fit`) leaves in its work dir and prints: the
checkpoint of its choice, ``fit_prior.json`` (written and read here), ``fit_prior.png``
and the terminal table."""
import json
import os
import os.path as osp
import shutil
from typing import List

from .reports import pyplot

#: The fit's summary in its work dir (:func:`read_fit_summary`).
FIT_SUMMARY = 'fit_prior.json'


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
    returns: its fused detector, or the chosen training."""
    if summary.get('fused'):
        return summary['fused']
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


def format_summary(summary: dict) -> str:
    """A table of the trainings and the choice, for the terminal."""
    lines = ['training      priors                                  val R   criterion  '
             'test F1  test AP']
    for row in summary['trainings']:
        priors = ', '.join(f'{stage} {value}' for stage, value in row['priors'].items()
                           if value is not None)
        f1, ap = row['test']['avg_f1'], row['test']['ap']
        lines.append(f'{row["name"]:13s} {priors:39s} {row["val_recall"]:.3f}   '
                     f'{row["pu_criterion"]:.3f}      {_number(f1):7s}  {_number(ap)}')
    fused = summary.get('fused')
    if fused:
        f1, ap = fused['test']['avg_f1'], fused['test']['ap']
        votes = 'votes ' + ', '.join(f'{w:.2f}' for w in fused['weights'])
        lines.append(f'{"fused":13s} {votes:39s} {fused["val_recall"]:.3f}   '
                     f'{"-":11s}{_number(f1):7s}  {_number(ap)}')
    lines.append(f'chosen: {summary["chosen"]} ({summary["reason"]}); checkpoint '
                 f'{summary["checkpoint"]}')
    if summary['chosen_config'] != summary['config']:
        what = ('the trainings fused; tools/test.py tests it with that checkpoint'
                if fused else 'the own-loss self-training')
        lines.append(f'its config: {summary["chosen_config"]} ({what})')
    if summary['chosen_cfg_options']:
        lines.append('its options: --cfg-options ' + ' '.join(summary['chosen_cfg_options']))
    return '\n'.join(lines)
