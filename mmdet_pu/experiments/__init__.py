"""Experiments over configs, run as subprocesses of ``tools/``:

* :mod:`.runs` -- the one launcher of training + test runs, scheduled side by side and
  resumable (every tool that trains goes through it);
* :mod:`.repeat` -- configs over seeds (and folds), compared (``tools/repeat.py``);
* :mod:`.demo` -- the embedded demo, a preset of :mod:`.repeat` (``tools/demo.py``);
* :mod:`.reports` -- the one writer of reports and figures.

This package imports none of them; import the module you need.
"""
