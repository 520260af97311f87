"""Library calls behind the tools, one module per task; import the module you need:

* :mod:`.slide` -- whole-slide detection exported to QuPath (``tools/infer_slide.py``,
  docs/slides.md), over :mod:`mmdet_pu.io.slides` (region reads of slides) and :mod:`.tissue`
  (tissue mask);
* :mod:`.cohort` -- the same over a cohort of slides: sharded over processes and
  machines, resumable, with a manifest (``tools/dist_infer_slide.sh``);
* :mod:`.runs` -- scheduled training + test runs (``tools/repeat.py``, ``tools/demo.py``);
* :mod:`.prior_keys` -- the config keys that hold pi (``tools/sweep_prior.py``,
  ``tools/estimate_prior.py``).

This package imports none of them, so ``from mmdet_pu.apis import runs`` loads neither
the slide readers nor OpenSlide, and ``import mmdet_pu`` does not import it at all.
"""
