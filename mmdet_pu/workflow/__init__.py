"""The own-data workflow: a config's trainings scheduled as subprocesses of the
library's command lines (:mod:`mmdet_pu.commands`), and the prior fit built on them
(``tools/fit_prior.py``; docs/method.md#prior-selection):

* :mod:`.runs` -- the one launcher of training + test runs, scheduled side by side and
  resumable (everything that trains goes through it);
* :mod:`.estimate` -- each stage's prior estimated from a run's detector;
* :mod:`.prior_fit` -- pi fitted to a config's own data and a self-training round, in
  at most four trainings, returned as one fused detector; its parts: the choices
  (:mod:`.fit_options`), the trainings' rows and the choice among them
  (:mod:`.fit_choice`), the self-training round (:mod:`.self_training`) on
  pseudo-labels (:mod:`.pseudo_labels`, the round's own losses: :mod:`.own_loss`), the
  fused ensemble (:mod:`.fused_ensemble`), the one detector distilled from it
  (:mod:`.distillation`) and what the fit leaves (:mod:`.fit_report`);
* :mod:`.reports` -- the one writer of reports and figures.

This package imports none of them; import the module you need. The studies in the
checkout's ``studies/`` schedule their runs through here.
"""
