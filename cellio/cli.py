"""What every command line of the project shares: argparse types, the launcher
arguments of the training tools, and the report of user errors.

Imports only the standard library: ``data_prep``'s converters and the tools print their
``--help`` and their errors without loading torch, mmengine or mmdet.
"""
import argparse
import os
import os.path as osp
import sys

#: The ``--launcher`` choices of the training and test command lines (mmdet's).
LAUNCHERS = ('none', 'pytorch', 'slurm', 'mpi')

# ------------------------------------------------------------ command-line errors --

#: Exceptions that describe bad input (data, paths, options, a config) rather than a bug:
#: the code the tools and converters call raises ValueError naming the file, line or
#: option, and OSError for missing files.
USER_ERRORS = (ValueError, OSError)
#: :data:`USER_ERRORS` and what the tools that schedule trainings in subprocesses also
#: report without a traceback: a config key that does not exist (``KeyError``) and runs
#: that failed (``RuntimeError``, naming their logs).
RUN_ERRORS = USER_ERRORS + (KeyError, RuntimeError)


def report_user_errors(main, argv=None, errors=USER_ERRORS) -> int:
    """Run a command-line ``main(argv)``; return its exit status (for ``sys.exit``).

    One of ``errors`` is printed as ``<program>: error: <message>`` on stderr and gives
    status 2, as argparse's own errors do; any other exception is a bug and propagates
    with its traceback.
    """
    try:
        main(argv)
    except errors as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f'{osp.basename(sys.argv[0])}: error: {message}', file=sys.stderr)
        return 2
    return 0


# ------------------------------------------------------------ launcher arguments --

def add_launcher_arguments(parser) -> None:
    """``--launcher`` and the ``--local-rank`` that ``torch.distributed.launch`` passes
    (torch >= 2.0), as mmdet's tools take them."""
    parser.add_argument('--launcher', choices=LAUNCHERS, default='none', help='job launcher')
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)


def parse_launch_args(parser, argv=None):
    """``parser.parse_args(argv)``; ``LOCAL_RANK`` is set from ``--local-rank`` unless the
    launcher set it."""
    args = parser.parse_args(argv)
    if 'LOCAL_RANK' not in os.environ:
        os.environ['LOCAL_RANK'] = str(args.local_rank)
    return args


# ------------------------------------------------------------ command-line values --

def parse_roi(text):
    """argparse type: ``'x,y,w,h'`` -> a tuple of four ints (QuPath's level-0 pixels)."""
    try:
        x, y, w, h = (int(v) for v in text.split(','))
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected x,y,w,h (four integers), got {text!r}')
    if w <= 0 or h <= 0 or x < 0 or y < 0:
        raise argparse.ArgumentTypeError(f'expected x, y >= 0 and w, h > 0, got {text!r}')
    return x, y, w, h


def int_at_least(minimum):
    """argparse type: an integer >= ``minimum``."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'expected an integer, got {text!r}')
        if value < minimum:
            raise argparse.ArgumentTypeError(f'expected an integer >= {minimum}, got {value}')
        return value
    return parse


def positive_float(text):
    """argparse type: a number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected a number, got {text!r}')
    if not value > 0:
        raise argparse.ArgumentTypeError(f'expected a number > 0, got {text!r}')
    return value


def score_thr_or_val(text):
    """argparse type of ``--score-thr`` of the test and slide command lines: a score in
    [0, 1], or ``'val'`` (:func:`mmdet_pu.evaluation.validation_thr.resolve_score_thr`)."""
    if text == 'val':
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a score in [0, 1] or 'val', got {text!r}")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f'expected a score in [0, 1], got {text!r}')
    return value
