"""The class prior pi: where configs hold it, how it is estimated and how it is chosen.
A library that trains nothing: the prior fit that trains (:mod:`mmdet_pu.workflow`) and
the studies (the sweep, the family of regimes, the estimate against the sweep, in the
checkout's ``studies/``) import it.

* :mod:`.keys` -- the config keys that hold pi;
* :mod:`.samples` -- the samples each PU stage draws in training, redrawn from a
  trained detector;
* :mod:`.estimation` -- the estimators of pi over those samples (docs/method.md#prior-selection);
* :mod:`.positive_share` -- the share of cells among the samples of every classification
  loss, counted with the stage's own assigner (``tools/positive_share.py``);
* :mod:`.label_frequency` -- the label-frequency estimate of every stage of a dense or
  cascade detector;
* :mod:`.estimate_file` -- the estimate report: built, printed, written and read back;
* :mod:`.from_checkpoint` -- the estimate of a config's priors from a checkpoint
  (``tools/estimate_prior.py``);
* :mod:`.selection` -- choosing pi from validation runs (recall, Lee & Liu's criterion,
  the recall band);
* :mod:`.candidates` -- candidate priors: the estimated shares scaled in odds, as
  ``--cfg-options``.

This package imports none of them; import the module you need.
"""
