"""The studies behind docs/experiments.md: experiments over configs and seeds that
import the library (:mod:`mmdet_pu`) and schedule their trainings with
:mod:`mmdet_pu.workflow.runs`. They live in the checkout beside ``tools/``, are not
installed with the package, and may run the checkout's scripts (the demo prepares its
data with ``data_prep/prepare.py``); the library never imports them.

* :mod:`.repeat` -- configs over seeds (and folds), compared (``tools/repeat.py``);
* :mod:`.demo` -- the embedded demo, a preset of :mod:`.repeat` (``tools/demo.py``);
* :mod:`.comparison` -- methods compared over runs or test images: mean ± std, paired
  t-tests, BH (``tools/compare.py``), with its tables and figure
  (:mod:`.comparison_format`);
* :mod:`.prior_sweep` -- the grid search of pi on the validation set
  (``tools/sweep_prior.py``);
* :mod:`.prior_versus` -- the estimate against the sweep over seeds
  (``tools/estimate_vs_sweep.py``);
* :mod:`.prior_family` -- every prior rule across a family of synthetic regimes
  (``tools/prior_family.py``).

This package imports none of them; import the module you need. The tools that run a
study put the checkout's root on ``sys.path`` first, so they run from any folder.
"""
