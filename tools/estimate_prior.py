"""Estimate the class prior pi of each PU stage from a detector trained with a
provisional prior: the command line of :mod:`mmdet_pu.commands.estimate_prior`
(``python tools/estimate_prior.py -h`` gives its usage and options)."""
import sys

from cellio.cli import report_user_errors
from mmdet_pu.commands.estimate_prior import main

if __name__ == '__main__':
    sys.exit(report_user_errors(main))
