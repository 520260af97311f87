"""Each PU stage's prior estimated from a scheduled run's detector: the estimate command
line (:mod:`mmdet_pu.commands.estimate_prior`) started as a subprocess, its estimate file
read back with :func:`~mmdet_pu.prior.estimate_file.read_estimate`."""
import os.path as osp
from typing import Optional, Sequence

from mmdet_pu.prior.estimate_file import Estimate, read_estimate
from .runs import Run, available_cores, log_tail, module_command, start_command

#: The module :func:`estimate_run` starts with ``python -m``.
ESTIMATE_MODULE = 'mmdet_pu.commands.estimate_prior'


def existing_estimate(path: str) -> Optional[Estimate]:
    """The estimate in ``path``; None when it is missing or unreadable (then the
    estimate is made again)."""
    try:
        return read_estimate(path)
    except (OSError, ValueError):
        return None


def estimate_run(provisional: Run, out: str, estimate_options: Sequence[str] = ()) -> Estimate:
    """The estimate command line on the provisional run's checkpoint, with its options
    and ``estimate_options``, into ``out`` (its log ``estimate_prior.log`` beside it).

    Raises:
        RuntimeError: the estimate failed or wrote no readable file (the message ends
            with its log).
    """
    checkpoint = provisional.last_checkpoint()
    command = module_command(ESTIMATE_MODULE, provisional.config, checkpoint, '--out', out,
                             *estimate_options, '--cfg-options', *provisional.options)
    log = osp.join(osp.dirname(out), 'estimate_prior.log')
    returncode = start_command(command, log, available_cores()).wait()
    estimate = existing_estimate(out)
    if returncode != 0 or estimate is None:
        raise RuntimeError(f'the prior estimate failed on {checkpoint} (exit '
                           f'{returncode}); log {log}:\n{log_tail(log, 20)}')
    return estimate
