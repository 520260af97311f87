"""Experiments over configs, run as subprocesses of ``tools/``:

* :mod:`.runs` -- the one launcher of training + test runs, scheduled side by side and
  resumable (every tool that trains goes through it);
* :mod:`.repeat` -- configs over seeds (and folds), compared (``tools/repeat.py``);
* :mod:`.demo` -- the embedded demo, a preset of :mod:`.repeat` (``tools/demo.py``);
* :mod:`.prior_sweep` -- the grid search of pi on the validation set
  (``tools/sweep_prior.py``);
* :mod:`.prior_fit` -- pi fitted to a config's own data and a self-training round, in
  at most four trainings (``tools/fit_prior.py``);
* :mod:`.pseudo_labels` -- a detector's confident detections on the training split as
  labels for self-training;
* :mod:`.prior_versus` -- the estimate against the sweep over seeds
  (``tools/estimate_vs_sweep.py``);
* :mod:`.prior_family` -- every prior rule across a family of synthetic regimes
  (``tools/prior_family.py``);
* :mod:`.reports` -- the one writer of reports and figures.

This package imports none of them; import the module you need.
"""
