"""The library's command lines, each runnable as ``python -m mmdet_pu.commands.<name>``:

* :mod:`.train` -- train a config (``--test``: then test its last checkpoint);
* :mod:`.test` -- test a checkpoint with a config;
* :mod:`.estimate_prior` -- estimate each PU stage's prior from a trained detector.

The workflow's scheduled runs (:mod:`mmdet_pu.workflow.runs`) start them as
subprocesses; ``tools/train.py``, ``tools/test.py`` and ``tools/estimate_prior.py`` are
the same command lines. This package imports none of them.
"""
